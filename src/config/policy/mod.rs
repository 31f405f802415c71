//! What a configuration sent through the API (`PUT /api/config`, the
//! dashboard's editor) may do that the file may: the rule is that no
//! request, whatever its permissions, can read an environment variable, a
//! masked secret or a URL credential, or send a stored secret to a new
//! destination. SIGHUP reads the file, which the operator owns, and passes
//! none of this.
//!
//! A new configuration arrives in the shape `GET /api/config` gives out, so
//! its secrets may read `********` (or `${NAME:-********}`, or a URL with
//! masked parts). [`unmask`] puts the stored value back for each of them,
//! found by a stable key — an account, provider or API key by its `name`, a
//! webhook by its URL — never by position, so reordering a list or removing
//! an entry never moves a secret to the wrong place. It refuses, each as a
//! problem naming its key:
//!
//! - a mask that matches no stored secret: write that secret out;
//! - a stored secret (masked, or a `${NAME}` reference) whose destination
//!   changed: an IMAP password when the account's host, port, security or
//!   `ca_file` did; the OAuth2 client secret and refresh token when those
//!   or the token endpoint did (the access token they buy goes to the IMAP
//!   server); a provider's key (and its URL's masked parts) when the origin
//!   of its `url`, its `proxy` or its `ca_file` did; a webhook's headers and
//!   secret belong to its exact URL;
//! - a `${NAME}` reference that the file does not have in that very place:
//!   one written through the API would let the request pick any variable of
//!   the service's environment and have it checked, echoed or sent where it
//!   likes. References stay where the operator wrote them.
//!
//! [`outgoing_problems`] then holds the typed result to the policy of
//! outgoing requests: provider, proxy and token URLs that are new pass the
//! SSRF guard of webhooks with the file's `webhook_settings.allow_private`,
//! and that list cannot grow through the API.

use serde_norway::Value;

use super::env::{pieces, Piece};
use super::redact::{
    is_secret_path, is_url_key, masked_secret, redact_url, unencode_masks, unmask_url,
};
use super::{Config, MASK};

/// Puts stored secrets back where `new` shows them masked; `old` is the tree
/// as written in the file now. Returns every problem (see the module).
pub fn unmask(new: &mut Value, old: &Value) -> Result<(), Vec<String>> {
    let mut w = Walk {
        path: Vec::new(),
        owners: Vec::new(),
        problems: Vec::new(),
    };
    w.walk(new, Some(old));
    if w.problems.is_empty() {
        Ok(())
    } else {
        Err(w.problems)
    }
}

/// Which sections of a new tree a client sent, and so pass [`unmask`]'s
/// policy; the others are the file's own, as written, put there by the
/// service. A `write:accounts` key sends `accounts` alone; the rule form
/// sends one rule, checked on its own. Run over the
/// file's sections as written, the policy took a webhook's URL written
/// out for a new hook and its `${NAME}` secret for one "added through the
/// API"; over them as `GET` shows them, a `${NAME}` in a URL for a
/// changed one (two audits): neither was sent by the client.
#[derive(Clone, Copy, Debug)]
pub enum Sent<'a> {
    All,
    Only(&'a [&'a str]),
}

/// [`unmask`] over the sections of `new` that `sent` says a client sent.
pub fn unmask_sent(new: &mut Value, old: &Value, sent: Sent<'_>) -> Result<(), Vec<String>> {
    let Sent::Only(keys) = sent else {
        return unmask(new, old);
    };
    let mut problems = Vec::new();
    for key in keys {
        let Some(section) = new.get(*key).cloned() else {
            continue;
        };
        let alone = |v: Option<&Value>| -> Value {
            Value::Mapping(
                v.map(|v| (Value::from(*key), v.clone()))
                    .into_iter()
                    .collect(),
            )
        };
        let mut sent_alone = alone(Some(&section));
        if let Err(p) = unmask(&mut sent_alone, &alone(old.get(*key))) {
            problems.extend(p);
        }
        if let (Some(m), Some(v)) = (new.as_mapping_mut(), sent_alone.get(*key)) {
            m.insert(Value::from(*key), v.clone());
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Whether `s` holds a `${NAME:-default}` whose default is written out
/// (not the mask `GET` shows in its place).
fn literal_default(s: &str) -> bool {
    pieces(s).is_ok_and(|ps| {
        ps.iter()
            .any(|p| matches!(p, Piece::Ref { default: Some(d), .. } if *d != MASK))
    })
}

/// Whether `s` holds a `${NAME}` reference (a `$${` escape is text).
fn has_reference(s: &str) -> bool {
    match pieces(s) {
        Ok(ps) => ps.iter().any(|p| matches!(p, Piece::Ref { .. })),
        // Not parseable: substitution reports it (as sent) later.
        Err(_) => s.contains("${"),
    }
}

/// The key that identifies an element of the list at `path` (with `*` for
/// list indices), or `None` for lists whose elements have no identity.
fn identity(path: &[String]) -> Option<&'static str> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["accounts"] | ["classifier", "providers"] | ["dashboard", "api_keys"] => Some("name"),
        ["webhooks"] | ["accounts", "*", "webhooks"] => Some("url"),
        _ => None,
    }
}

/// Whether a mask is anywhere in `v` (a scalar, or any value inside it).
fn holds_mask(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains(MASK),
        Value::Sequence(items) => items.iter().any(holds_mask),
        Value::Mapping(m) => m.values().any(holds_mask),
        Value::Tagged(t) => holds_mask(&t.value),
        _ => false,
    }
}

/// What a sent element of an identified list stands for among the stored
/// ones.
#[derive(Clone, Copy)]
enum Counterpart<'o> {
    /// The stored element, and how many stored elements share its key
    /// and differ (0 when none do); then no second sent element may claim
    /// it too.
    One(&'o Value, usize),
    None,
    /// Several stored elements share its key and differ: which one a mask
    /// of it means cannot be told (two webhooks on one URL with different
    /// secrets). Never guessed by position.
    Ambiguous(usize),
}

/// The stored elements of one identified list, by the text a sent key
/// must be to stand for each: a name as written; a URL as `GET` shows it
/// (its secrets masked), or as stored when nothing of it is masked (see
/// [`same_endpoint`]). Made once a list, so matching N sent elements
/// against N stored ones is not N² redactions (a regression audit timed
/// 1,000 hooks at 2.6 s).
struct Index<'o> {
    olds: &'o [Value],
    by_key: std::collections::HashMap<String, Vec<usize>>,
}

impl<'o> Index<'o> {
    fn new(key: Option<&str>, olds: &'o [Value]) -> Index<'o> {
        let mut by_key: std::collections::HashMap<String, Vec<usize>> = Default::default();
        if let Some(k) = key {
            for (i, o) in olds.iter().enumerate() {
                let Some(stored) = o.get(k).and_then(Value::as_str) else {
                    continue;
                };
                let mut keys = vec![stored.to_string()];
                // A URL, or a reference standing for one (`${HOOK:-https://…}`
                // shows as `${HOOK:-********}`: matched by nothing, it sent
                // back as read was "no stored value"; a regression audit).
                let shown = redact_url(stored);
                if k == "url" && shown != MASK {
                    if shown.contains(MASK) {
                        keys = vec![shown];
                    } else if shown != stored {
                        keys.push(shown);
                    }
                }
                for key in keys {
                    by_key.entry(key).or_default().push(i);
                }
            }
        }
        Index { olds, by_key }
    }
}

/// The stored element `v` stands for. By its identity key; a URL as sent
/// must be the stored one as `GET` shows it, so two hook URLs that differ
/// only in a masked token are never taken for each other, and a masked
/// part written out is a change whether or not it is the stored value
/// (matched by its value, a right guess of a hook's token kept the hook's
/// secret and a wrong one was refused: a test of guesses at no cost; a
/// regression audit). Several stored elements with that key are told
/// apart by what `v` shows unmasked (a webhook's `events`, say); those
/// still alike must be equal, or the match is [`Counterpart::Ambiguous`].
/// Elements without identity match only an equal stored element.
fn counterpart<'o>(key: Option<&str>, v: &Value, index: &Index<'o>) -> Counterpart<'o> {
    let olds = index.olds;
    let Some(k) = key else {
        return olds
            .iter()
            .find(|o| *o == v)
            .map_or(Counterpart::None, |o| Counterpart::One(o, 0));
    };
    let Some(mut id) = v.get(k).and_then(Value::as_str).map(str::to_string) else {
        return Counterpart::None;
    };
    if k == "url" {
        id = unencode_masks(&id);
    }
    let same_key: Vec<&Value> = (index.by_key.get(&id).into_iter().flatten())
        .map(|&i| &olds[i])
        .collect();
    // Of those, the ones that agree with every other field sent unmasked
    // (the key itself matched already, as shown: a percent-encoded mask in
    // it read as a value no stored element has, and two hooks told apart
    // by their events became ambiguous; a regression audit).
    let shown_alike = |o: &&Value| {
        v.as_mapping().is_some_and(|m| {
            (m.iter()).all(|(f, x)| f.as_str() == Some(k) || holds_mask(x) || o.get(f) == Some(x))
        })
    };
    let shared = if same_key.iter().any(|o| *o != same_key[0]) {
        same_key.len()
    } else {
        0
    };
    let alike: Vec<&Value> = same_key.iter().copied().filter(shown_alike).collect();
    let candidates = if alike.is_empty() { &same_key } else { &alike };
    match candidates.as_slice() {
        [] => Counterpart::None,
        [first, rest @ ..] if rest.iter().all(|o| o == first) => Counterpart::One(first, shared),
        _ => Counterpart::Ambiguous(same_key.len()),
    }
}

/// An identified element being walked through: the list it is in, the
/// element as sent (before its masks are filled in) and the stored one.
struct Owner<'o> {
    list: Vec<String>,
    new: Value,
    old: Option<&'o Value>,
}

struct Walk<'o> {
    path: Vec<String>,
    owners: Vec<Owner<'o>>,
    problems: Vec<String>,
}

impl<'o> Walk<'o> {
    fn walk(&mut self, new: &mut Value, old: Option<&'o Value>) {
        match new {
            Value::Mapping(m) => {
                for (k, v) in m.iter_mut() {
                    let Some(name) = k.as_str() else { continue };
                    let counterpart = old.and_then(|o| o.get(name));
                    self.path.push(name.to_string());
                    self.walk(v, counterpart);
                    self.path.pop();
                }
            }
            Value::Sequence(items) => {
                let key = identity(&self.path);
                let olds = old.and_then(Value::as_sequence).map(Vec::as_slice);
                let index = olds.map(|olds| Index::new(key, olds));
                let mut found: Vec<Counterpart<'o>> = items
                    .iter()
                    .map(|v| {
                        (index.as_ref()).map_or(Counterpart::None, |ix| counterpart(key, v, ix))
                    })
                    .collect();
                // A stored element among others of its key, claimed by two
                // sent ones: which of them its values belong to cannot be
                // told either.
                let mut claims: std::collections::HashMap<*const Value, usize> = Default::default();
                for f in &found {
                    if let Counterpart::One(o, _) = f {
                        *claims.entry(std::ptr::from_ref(*o)).or_default() += 1;
                    }
                }
                let contested: Vec<(usize, usize)> = found
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| match *f {
                        Counterpart::One(o, n) if n > 0 && claims[&std::ptr::from_ref(o)] > 1 => {
                            Some((i, n))
                        }
                        _ => None,
                    })
                    .collect();
                for (i, n) in contested {
                    found[i] = Counterpart::Ambiguous(n);
                }
                for (i, v) in items.iter_mut().enumerate() {
                    let found = found[i];
                    if let Counterpart::Ambiguous(n) = found {
                        if holds_mask(v) {
                            self.problems.push(format!(
                                "{}[{i}]: {n} stored entries have its {} and differ, so which \
                                 one's value a {MASK} keeps cannot be told; write its values \
                                 in full",
                                shown(&self.path),
                                key.unwrap_or("key"),
                            ));
                            continue;
                        }
                    }
                    let stored = match found {
                        Counterpart::One(o, _) => Some(o),
                        _ => None,
                    };
                    if key.is_some() {
                        self.owners.push(Owner {
                            list: self.path.clone(),
                            new: v.clone(),
                            old: stored,
                        });
                    }
                    self.path.push("*".into());
                    let before = self.problems.len();
                    self.walk(v, stored);
                    self.path.pop();
                    if key.is_some() {
                        self.owners.pop();
                    }
                    // Name the element, not `*`, in what went wrong inside it.
                    let list = shown(&self.path);
                    for p in &mut self.problems[before..] {
                        *p = p.replacen(&format!("{list}[*]"), &format!("{list}[{i}]"), 1);
                    }
                }
            }
            Value::Tagged(t) => self.walk(&mut t.value, old),
            Value::String(s) => {
                let masked = s.contains(MASK);
                self.string(s, old);
                // A number or a boolean kept by its mask stays what it was
                // (a GET put back unchanged leaves the file alone).
                if let Some(o) = old.filter(|o| scalar_text(o).is_some_and(|t| t == *s)) {
                    if masked && !o.is_string() {
                        *new = o.clone();
                    }
                }
            }
            _ => {}
        }
    }

    fn string(&mut self, s: &mut String, old: Option<&Value>) {
        let secret = is_secret_path(&self.path);
        let url = self.path.last().is_some_and(|k| is_url_key(k));
        // A mask a URL library sent percent-encoded is a mask (taken for
        // text, it replaced the stored token, and the masked view hid
        // that; the third regression audit).
        if url {
            *s = unencode_masks(s);
        }
        let masked = (secret || url) && s.contains(MASK);
        // `GET` shows a reference's default here as the mask; one sent
        // written out was kept when it was the stored default and refused
        // when not, which told a guess of it, also to a key that cannot
        // read the configuration (a regression audit). Either way now: as
        // shown, or not at all.
        if (secret || url) && literal_default(s) {
            self.problems.push(format!(
                "{}: a ${{NAME:-default}} here is shown with its default as {MASK}; send it as \
                 shown, or write the value itself, or edit the file and reload",
                shown(&self.path)
            ));
            *s = super::env::literal(s);
            return;
        }
        if !masked && !has_reference(s) {
            // A URL sent back as `GET` shows the stored one is the stored
            // text, not its normal form (`HTTP://x:80` was saved back as
            // `http://x/`, a fragment dropped; a regression audit).
            if let Some(o) = old
                .and_then(Value::as_str)
                .filter(|o| url && *o != s.as_str())
            {
                if url::Url::parse(o).is_ok() && redact_url(o) == *s {
                    *s = o.to_string();
                }
            }
            return;
        }
        let at = shown(&self.path);
        // A secret written as a number or a boolean (`password: 12345`) is
        // shown masked as any other: its mask keeps it (an audit found every
        // change refused while one was in the file).
        let stored_text = old.and_then(scalar_text);
        let stored = stored_text.as_deref();
        let value = if masked {
            let shown_as = |o: &str| {
                if secret {
                    masked_secret(o)
                } else {
                    redact_url(o)
                }
            };
            match stored {
                Some(o) if shown_as(o) == *s => o.to_string(),
                // A URL edited along its own origin keeps its masked parts.
                Some(o) => match unmask_url(s, o).filter(|_| url) {
                    Some(v) => v,
                    None => {
                        self.problems.push(format!(
                            "{at}: reads {MASK} but does not match the stored value; write the value in full"
                        ));
                        return;
                    }
                },
                None => {
                    self.problems.push(format!(
                        "{at}: reads {MASK} but there is no stored value to keep; write the value in full"
                    ));
                    return;
                }
            }
        } else {
            s.clone()
        };
        if has_reference(&value) && stored != Some(value.as_str()) {
            self.problems.push(format!(
                "{at}: ${{NAME}} references cannot be added or changed through the API \
                 (the request would choose which environment variable is used); write the \
                 value itself, or edit the file and reload"
            ));
            // Checked from here on as the text it is, never as what the
            // variable holds.
            *s = super::env::literal(s);
            return;
        }
        if secret || url {
            if let Some(what) = self.moved() {
                self.problems.push(format!(
                    "{at}: {what} changed, and a stored secret does not follow a new \
                     destination; write the value in full"
                ));
                return;
            }
        }
        *s = value;
    }

    /// What changed of the destination of the secret at the current path
    /// (see the module), or `None` when it goes where it went (or nowhere:
    /// `auth_token`, `session_secret` and API keys are only compared with).
    fn moved(&self) -> Option<String> {
        type Dest = fn(&Value) -> Vec<(&'static str, String)>;
        let p: Vec<&str> = self.path.iter().map(String::as_str).collect();
        let (list, dest): (&[&str], Dest) = match p.as_slice() {
            ["accounts", "*", "imap", "password"] => (&["accounts"], imap_destination),
            ["accounts", "*", "imap", "oauth2", ..] => (&["accounts"], oauth2_destination),
            ["classifier", "providers", "*", ..] => {
                (&["classifier", "providers"], provider_destination)
            }
            ["webhooks", "*", ..] => (&["webhooks"], webhook_destination),
            ["accounts", "*", "webhooks", "*", ..] => {
                (&["accounts", "*", "webhooks"], webhook_destination)
            }
            _ => return None,
        };
        let owner = self.owners.iter().rev().find(|o| o.list == list)?;
        let old = owner.old?;
        dest(&owner.new)
            .into_iter()
            .zip(dest(old))
            .find(|(a, b)| {
                if a.0.starts_with("imap.oauth2.") && a.0.ends_with("_url") {
                    !same_endpoint(&a.1, &b.1)
                } else {
                    a.1 != b.1
                }
            })
            .map(|(a, _)| a.0.to_string())
    }
}

/// A scalar as text (`993` and `"993"` alike); missing is empty.
fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Tagged(t)) => text(Some(&t.value)),
        _ => String::new(),
    }
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

/// Where a URL connects to: scheme, host and port, whatever its path,
/// query and (possibly masked) user-info. Written with a reference, or not
/// a URL: as written.
fn origin(v: Option<&Value>) -> String {
    let t = text(v);
    if has_reference(&t) {
        return t;
    }
    match url::Url::parse(&t) {
        Ok(u) => format!(
            "{}://{}:{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port_or_known_default()
                .map(|p| p.to_string())
                .unwrap_or_default()
        ),
        Err(_) => t,
    }
}

/// Where an account's IMAP password goes.
fn imap_destination(account: &Value) -> Vec<(&'static str, String)> {
    let imap = |k: &str| at(account, &["imap", k]);
    let security = match text(imap("security")).as_str() {
        "" => "tls".to_string(),
        s => s.to_string(),
    };
    let port = match text(imap("port")) {
        p if !p.is_empty() => p,
        _ if security == "tls" => "993".into(),
        _ => "143".into(),
    };
    vec![
        ("imap.host", text(imap("host")).to_ascii_lowercase()),
        ("imap.port", port),
        ("imap.security", security),
        ("imap.ca_file", text(imap("ca_file"))),
    ]
}

/// Where an account's OAuth2 client secret and refresh token go: to the
/// token endpoint, and the access token they buy to the IMAP server. The
/// endpoints whole, path too (see `same_endpoint`): one identity provider
/// serves many tenants or realms by path, and a secret kept for
/// `…/realms/a/token` went to `…/realms/b/` (the secrets audit found only
/// the origin compared).
fn oauth2_destination(account: &Value) -> Vec<(&'static str, String)> {
    let o = |k: &str| at(account, &["imap", "oauth2", k]);
    let endpoint = |k: &str| text(o(k));
    let mut d = imap_destination(account);
    d.extend([
        ("imap.oauth2.preset", text(o("preset"))),
        ("imap.oauth2.token_url", endpoint("token_url")),
        (
            "imap.oauth2.device_authorization_url",
            endpoint("device_authorization_url"),
        ),
        ("imap.oauth2.ca_file", text(o("ca_file"))),
    ]);
    d
}

/// Where a provider's key (and its URL's credentials) go.
fn provider_destination(provider: &Value) -> Vec<(&'static str, String)> {
    vec![
        ("url", origin(provider.get("url"))),
        ("proxy", origin(provider.get("proxy"))),
        ("ca_file", text(provider.get("ca_file"))),
    ]
}

/// A webhook's headers and secret go to its URL, exactly.
fn webhook_destination(hook: &Value) -> Vec<(&'static str, String)> {
    vec![("url", redact_url(&text(hook.get("url"))))]
}

/// Whether a token endpoint `sent` (as the client sent it: the element is
/// kept as sent, before its masks are taken back) is the stored one: the
/// URL as `GET` shows it, every masked part still masked, or the stored
/// URL written out when it has no part to mask. A masked part written
/// out is a change whether or not it is the stored value (a tenant,
/// realm or password compared as what it stands for told a guess of it
/// right, at no cost; the fourth regression audit), and so is any other
/// edit (a tenant where the stored one shows masked; the second).
fn same_endpoint(sent: &str, stored: &str) -> bool {
    let sent = unencode_masks(sent);
    // Not set (or not a URL, which validation refuses): as written.
    if url::Url::parse(stored).is_err() {
        return sent == stored;
    }
    let shown = redact_url(stored);
    sent == shown || (sent == stored && !shown.contains(MASK))
}

/// A path as the configuration's error messages write it:
/// `accounts[*].imap.password`.
fn shown(path: &[String]) -> String {
    let mut out = String::new();
    for p in path {
        if p == "*" {
            out.push_str("[*]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            // As every problem's path: an odd key quoted, a control
            // character escaped (a regression audit).
            out.push_str(&super::typed::shown_key(p));
        }
    }
    out
}

/// Every URL of `c` that requests other than webhooks go to, by path.
pub fn outgoing_urls(c: &Config) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for (i, pr) in c.classifier.providers.iter().enumerate() {
        out.push((format!("classifier.providers[{i}].url"), pr.url.as_str()));
        if let Some(proxy) = &pr.proxy {
            out.push((format!("classifier.providers[{i}].proxy"), proxy.as_str()));
        }
    }
    for (i, a) in c.accounts.iter().enumerate() {
        if let Some(o) = &a.imap.oauth2 {
            if let Some(u) = o.token_url() {
                out.push((format!("accounts[{i}].imap.oauth2.token_url"), u));
            }
            if let Some(u) = o.device_authorization_url() {
                out.push((
                    format!("accounts[{i}].imap.oauth2.device_authorization_url"),
                    u,
                ));
            }
        }
    }
    out
}

/// A scalar as the configuration reads it into a string field (see
/// `schema::de_string`: `1.0` is "1"), so that a mask keeps the value the
/// service runs with (an audit found `password: 1.0` put back as "1.0").
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(if let Some(i) = n.as_i64() {
            i.to_string()
        } else if let Some(u) = n.as_u64() {
            u.to_string()
        } else {
            n.as_f64()?.to_string()
        }),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
