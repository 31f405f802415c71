//! What a change of the running configuration may do, checked before it
//! is applied: the settings only a restart changes, the API's own
//! authentication, and where outgoing requests may go.

use crate::config::Config;

/// Settings read once at start-up, by path, that differ between `old` and
/// `new`.
pub fn restart_required(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |path: &str, differs: bool| {
        if differs {
            out.push(path.to_string());
        }
    };
    check("server.bind", old.server.bind != new.server.bind);
    check("server.port", old.server.port != new.server.port);
    check("server.workers", old.server.workers != new.server.workers);
    check(
        "server.max_connections",
        old.server.max_connections != new.server.max_connections,
    );
    check("storage.path", old.storage.path != new.storage.path);
    check(
        "classifier.concurrency",
        old.classifier.concurrency != new.classifier.concurrency,
    );
    check(
        "dashboard.session_secret",
        old.dashboard.session_secret != new.dashboard.session_secret,
    );
    check("log_level", old.log_level != new.log_level);
    out
}

/// How long a new outgoing URL's host may take to resolve.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A change through the API or the dashboard may not leave the API without
/// authentication when it has some: it came from someone signed in, and
/// would open every endpoint to anyone who reaches the port. Running open
/// (development only) is chosen in the file.
pub(super) fn auth_problems(old: &Config, new: &Config) -> Vec<String> {
    if crate::auth::api_is_open(new) && !crate::auth::api_is_open(old) {
        vec![
            "server.auth_token: neither server.auth_token nor dashboard.api_keys would be \
              left, which opens the API to anyone who reaches it; a change through the API \
              keeps one of them (running without authentication is chosen in the file)"
                .to_string(),
        ]
    } else {
        Vec::new()
    }
}

/// What the validated configuration `new`, sent through the API, may not
/// do to outgoing requests, against the running `old`: widen
/// `webhook_settings.allow_private`, or name a provider URL, a provider
/// proxy or an OAuth2 token or device endpoint (one not in `old` already)
/// that the SSRF guard refuses. Resolves new host names (each within
/// [`RESOLVE_TIMEOUT`]).
pub(super) fn outgoing_problems(old: &Config, new: &Config) -> Vec<String> {
    let mut p = Vec::new();
    let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
    let old_nets: Vec<ipnet::IpNet> = (old.webhook_settings.allow_private.iter())
        .filter_map(|o| crate::config::parse_net(o.trim()))
        .collect();
    // Narrower is an entry of the file, or a range inside one of them
    // (`127.0.0.1` within `127.0.0.0/8`: an audit found it refused as
    // widening).
    let within = |e: &str| {
        crate::config::parse_net(e.trim()).is_some_and(|n| old_nets.iter().any(|o| o.contains(&n)))
    };
    for (i, e) in new.webhook_settings.allow_private.iter().enumerate() {
        if !(old
            .webhook_settings
            .allow_private
            .iter()
            .any(|o| same(o, e))
            || within(e))
        {
            p.push(format!(
                "webhook_settings.allow_private[{i}]: {e:?} is not in the file's list; which \
                 private addresses outgoing requests may reach is widened only in the file"
            ));
        }
    }
    let known: Vec<&str> = crate::config::outgoing_urls(old)
        .into_iter()
        .map(|(_, u)| u)
        .collect();
    let allow = crate::webhook::AllowList::new(&old.webhook_settings.allow_private);
    for (at, url) in crate::config::outgoing_urls(new) {
        if known.contains(&url) {
            continue;
        }
        if let Err(e) = crate::webhook::vet(url, &allow, RESOLVE_TIMEOUT) {
            let said = crate::config::redact_text(&e.to_string());
            p.push(match e {
                // Where it points is unknown: checked again when it resolves.
                crate::webhook::WebhookError::Resolve { .. } => format!(
                    "{at}: {said}; a new outgoing URL is checked against the private \
                     and local addresses before it is accepted, so its host must resolve"
                ),
                _ => format!(
                    "{at}: {said}; private and local addresses need \
                     webhook_settings.allow_private, which only the file can set"
                ),
            });
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_start_up_settings_need_a_restart() {
        let parse = |text: &str| crate::config::parse(text, &|_| None).unwrap().0;
        let old = parse("server: { port: 8080 }\n");
        let same = parse("server: { port: 8080, auth_token: abcdefghijklmnopqrstuvwxyz012345 }\n");
        assert!(restart_required(&old, &same).is_empty());
        let new = parse("server: { port: 9090, workers: 2 }\nstorage: { path: /tmp/x.db }\n");
        assert_eq!(
            restart_required(&old, &new),
            ["server.port", "server.workers", "storage.path"]
        );
    }

    #[test]
    fn allow_private_cannot_grow_and_new_outgoing_urls_are_vetted() {
        let parse = |t: &str| crate::config::parse(t, &|_| None).unwrap().0;
        let old = parse(
            "webhook_settings: { allow_private: [127.0.0.1/32] }\nclassifier: { providers: [ { name: p, kind: openai, url: \"http://10.1.2.3/v1\", model: m } ] }\n",
        );
        // What the file had stays, whatever it points at.
        assert!(outgoing_problems(&old, &old).is_empty());
        let new = parse(
            "webhook_settings: { allow_private: [127.0.0.1/32, 10.0.0.0/8] }\nclassifier: { providers: [ { name: p, kind: openai, url: \"http://10.1.2.3/v1\", model: m }, { name: q, kind: openai, url: \"http://169.254.169.254/v1\", model: m, proxy: \"http://192.168.1.1:3128\" }, { name: r, kind: openai, url: \"http://127.0.0.1:9/v1\", model: m } ] }\n",
        );
        let p = outgoing_problems(&old, &new);
        let at: Vec<&str> = p.iter().map(|p| p.split(':').next().unwrap()).collect();
        assert_eq!(
            at,
            [
                "webhook_settings.allow_private[1]",
                "classifier.providers[1].url",
                "classifier.providers[1].proxy",
            ],
            "{p:#?}"
        );
    }
}
