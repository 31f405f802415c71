//! The configuration's unit tests: parsing, `${NAME}`, validation and
//! redaction, through the functions of `config`.

use super::*;
use crate::actions::{Action, ActionKind};
use std::time::Duration;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("abcdefghijklmnopqrstu".into()),
        "PORT" => Some("9090".into()),
        "PASS" => Some("123456".into()),
        _ => None,
    }
}

fn parse_str(s: &str) -> Result<Config, ConfigError> {
    parse(s, &env).map(|(c, _)| c)
}

#[test]
fn model_actions_are_some_of_the_allowed_ones_and_the_model_sees_only_them() {
    let e = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             allowed_actions: [move], model_actions: [move, spam], \
             learned: { spam_first: 2, spam_confidence: -1 } }\n",
    )
    .unwrap_err();
    for want in [
        "accounts[0].model_actions: \"spam\" is not in allowed_actions",
        "accounts[0].learned.spam_first: must be between 0 and 1",
        "accounts[0].learned.spam_confidence: must be between 0 and 1",
    ] {
        assert!(
            e.problems.iter().any(|p| p == want),
            "{want}: {:#?}",
            e.problems
        );
    }
    let c = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             folders: { allowed: [Receipts, Junk] }, model_actions: [move, noop] }\n",
    )
    .unwrap();
    let a = &c.accounts[0];
    let m = a.for_model();
    assert!(a.allows(ActionKind::Spam) && !m.allows(ActionKind::Spam));
    assert!(!m.allows(ActionKind::Read) && m.allows(ActionKind::Move));
    assert_eq!(m.folders.allowed, ["Receipts"], "no Junk without spam");
    assert_eq!(a.folders.allowed, ["Receipts", "Junk"]);
    // Nor the configured junk folder, nor one named as junk folders
    // usually are, at any level (an audit moved mail to `Spam`).
    let c = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             folders: { allowed: [Receipts, Spam, Junk/Old, Quarantine, Quarantine/2026, QuarantineNot, \"Archive/Junk E-mail\"], junk: Quarantine }, \
             model_actions: [move, noop] }\n",
    )
    .unwrap();
    let m = c.accounts[0].for_model();
    assert_eq!(m.folders.allowed, ["Receipts", "QuarantineNot"]);
    // Two destinations: only the last was carried out, both recorded.
    let e = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             folders: { allowed: [X, Y] }, \
             rules: [ { name: r, when: { subject: s }, actions: [ { type: move, folder: X }, { type: spam } ] } ] }\n",
    )
    .unwrap_err();
    assert!(
        e.problems.iter().any(|p| p
            .starts_with("accounts[0].rules[0].actions: a message goes to one folder")
            && p.contains("move to \"X\", spam")),
        "{e}"
    );
    // Unset: the account's actions, and its junk and trash folders kept
    // from the model only when it may not spam or trash (a regression
    // audit: an account allowing neither had its model move mail there).
    let c = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             folders: { allowed: [Receipts, Junk, Trash] } }\n",
    )
    .unwrap();
    // (`trash` is not among the default actions: its folder is not the
    // model's either.)
    let m = c.accounts[0].for_model();
    assert_eq!(m.allowed_actions, c.accounts[0].allowed_actions);
    assert_eq!(m.folders.allowed, ["Receipts", "Junk"]);
    let c = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             folders: { allowed: [Receipts, Junk, Trash] }, allowed_actions: [move, noop] }\n",
    )
    .unwrap();
    assert_eq!(c.accounts[0].for_model().folders.allowed, ["Receipts"]);
}

/// A missing required value took the search with it: an account
/// without `imap` hid every problem of the accounts and sections after
/// it. Its item is taken out now and the rest read, each problem at
/// its place in the file.
#[test]
fn a_missing_value_hides_no_other_item() {
    let e = parse_str(
            "accounts:\n  - { name: a }\n\
             \x20 - { name: b, imap: { host: x, username: u, password: p } }\n\
             \x20 - { name: c, imap: { host: x, port: imap, username: u, password: p } }\n\
             \x20 - { name: d, imap: { host: x, username: u, password: p }, \
             folders: { allowed: [Receipts, [x], Bills, {y: 1}] }, \
             rules: [ { actions: [] }, { name: r, when: { subject: s }, actions: [ { type: nope } ] } ] }\n\
             webhooks: [ { url: [7], events: nope } ]\n",
        )
        .unwrap_err();
    let p = &e.problems;
    for want in [
        "accounts[0]: missing field `imap`",
        "accounts[2].imap.port: invalid type: string \"imap\", expected integer (0 to 65535)",
        "accounts[3].folders.allowed[1]: invalid type: sequence, expected a string",
        "accounts[3].folders.allowed[3]: invalid type: map, expected a string",
        "accounts[3].rules[0]: missing field `name`",
        "accounts[3].rules[1].actions[0].type: unknown variant `nope`",
        "webhooks[0].url: invalid type: expected a string",
        "webhooks[0].events: invalid type: string \"nope\", expected a sequence",
    ] {
        assert!(p.iter().any(|x| x.starts_with(want)), "{want}: {p:#?}");
    }
    // Nothing is said of what was taken out, nor twice.
    assert!(!p.iter().any(|x| x.contains("accounts[1]")), "{p:#?}");
    let mut seen = std::collections::HashSet::new();
    assert!(p.iter().all(|x| seen.insert(x)), "{p:#?}");
    // A wrong value with no default, taken out, is not also missing.
    let e = parse_str("accounts:\n  - { name: a, imap: 5 }\n").unwrap_err();
    assert_eq!(e.problems.len(), 1, "{:#?}", e.problems);
    assert!(
        e.problems[0].starts_with("accounts[0].imap: invalid type"),
        "{:#?}",
        e.problems
    );
}

#[test]
fn every_wrong_value_is_reported_at_once() {
    let e = parse_str(
            "server: { port: 80x, workers: many }\n\
             accounts:\n  - { name: a, imap: { host: x, port: 993x, username: u, password: p }, max_attempts: lots }\n",
        )
        .unwrap_err();
    assert_eq!(e.problems.len(), 4, "{:#?}", e.problems);
    for path in [
        "server.port",
        "server.workers",
        "accounts[0].imap.port",
        "accounts[0].max_attempts",
    ] {
        assert!(
            e.problems.iter().any(|p| p.starts_with(path)),
            "{path}: {:#?}",
            e.problems
        );
    }
    // A required value that is wrong is reported once, not as missing too.
    let e =
        parse_str("accounts:\n  - { name: a, imap: { host: [1], username: u, password: p } }\n")
            .unwrap_err();
    assert_eq!(e.problems.len(), 1, "{:#?}", e.problems);
    // Once the values read, the checks after them run too.
    let e = parse_str(
            "server: { port: 80x }\naccounts:\n  - { name: a, imap: { host: x, username: u, password: p }, \
             rules: [ { name: r, when: { subject: \"(x\" }, actions: [ { type: read } ] } ] }\n",
        )
        .unwrap_err();
    assert_eq!(e.problems.len(), 2, "{:#?}", e.problems);
}

#[test]
fn a_retry_delay_under_a_second_names_its_key() {
    let e = parse_str(
        "accounts:\n  - { name: a, imap: { host: x, username: u, password: p }, retry_delay: 0s }\n",
    )
    .unwrap_err();
    assert_eq!(
        e.problems,
        ["accounts[0].retry_delay: must be at least 1s"],
        "{e}"
    );
}

#[test]
fn log_level_defaults_to_info_and_names_the_choices() {
    assert_eq!(parse_str("{}").unwrap().log_level, LogLevel::Info);
    let c = parse_str("log_level: debug\n").unwrap();
    assert_eq!(c.log_level.filter(), log::LevelFilter::Debug);
    let e = parse_str("log_level: verbose\n").unwrap_err();
    assert_eq!(e.problems.len(), 1, "{e}");
    assert!(
        e.problems[0].starts_with("log_level: unknown variant `verbose`"),
        "{e}"
    );
    assert!(e.problems[0].contains("`warn`"), "{e}");
}

/// Found by an audit: an emptied file (a failed write, a `: >` by
/// mistake) was every default, and `systemctl reload` of it stopped every
/// account and opened the API. It is refused, naming what to write.
#[test]
fn an_empty_file_is_refused_and_braces_give_defaults() {
    for text in [
        "",
        "\n  \n",
        "# only a comment\n# and another\n",
        "---\n",
        "~\n",
    ] {
        let e = parse_str(text).unwrap_err();
        assert_eq!(e.problems.len(), 1, "{text:?}: {e}");
        assert!(e.problems[0].contains("holds no settings"), "{text:?}: {e}");
    }
    let c = parse_str("{}").unwrap();
    assert_eq!(c.server.port, 8080);
    assert_eq!(c.dashboard.session_ttl.0, Duration::from_secs(86_400));
    assert!(c.dashboard.enabled);
    assert_eq!(c.webhook_settings.timeout.0, Duration::from_secs(10));
}

#[test]
fn substitution_keeps_types_and_names_unset_variables() {
    let c = parse_str("server:\n  port: ${PORT}\n  auth_token: ${TOKEN}\n").unwrap();
    assert_eq!(c.server.port, 9090);
    assert_eq!(
        c.server.auth_token.as_deref(),
        Some("abcdefghijklmnopqrstu")
    );
    let e = parse_str("server:\n  auth_token: ${NOPE}\n").unwrap_err();
    assert_eq!(
        e.problems,
        vec!["server.auth_token: environment variable NOPE is not set"]
    );
    // An unset variable hides no other problem, and its value brings
    // none of its own (`port: ${NOPE}` is not also a type error).
    let e = parse_str(
            "server:\n  auth_token: ${NOPE}\n  port: ${NOPE2}\n  workerz: 3\naccounts:\n  - name: a\n    imap: { host: h, username: u, password: p, port: 99999 }\n",
        )
        .unwrap_err();
    assert_eq!(
        e.problems[..2],
        [
            "server.auth_token: environment variable NOPE is not set",
            "server.port: environment variable NOPE2 is not set",
        ],
        "{e}"
    );
    let rest = e.problems[2..].join("\n");
    assert!(rest.contains("server.workerz"), "{e}");
    assert!(rest.contains("accounts[0].imap.port"), "{e}");
    assert!(!rest.contains("server.port"), "{e}");
    let c = parse_str("server:\n  port: ${NOPE:-7070}\n").unwrap();
    assert_eq!(c.server.port, 7070);
    assert_eq!(substitute("a$${b}c", &env).unwrap(), "a${b}c");
    // `:-` covers an empty variable as the shell's does (stop 66's audit:
    // `PW=` in an EnvironmentFile sent an empty password); without a
    // fallback an empty variable is an empty value, as there.
    let empty = |n: &str| (n == "EMPTY").then(String::new);
    assert_eq!(substitute("${EMPTY:-secret}", &empty).unwrap(), "secret");
    assert_eq!(substitute("<${EMPTY}>", &empty).unwrap(), "<>");
    assert_eq!(
        substitute("Bearer ${TOKEN}!", &env).unwrap(),
        "Bearer abcdefghijklmnopqrstu!"
    );
}

/// Found by the first-hour audit (stop 59): a password with a `${` in it
/// that closes nowhere, or with a name that is no name, was quoted whole
/// (or in part) by the problem: `check-config` printed it, a reload logged
/// it for every `read:logs` key. The problem names the key, not the value.
#[test]
fn a_broken_reference_in_a_secret_is_not_quoted() {
    for (password, kept) in [
        ("Hunter2${Secret9", ["Hunter2", "Secret9"]),
        ("Tr0ub${4dor-3}x", ["Tr0ub", "4dor-3"]),
    ] {
        let e = parse_str(&format!(
            "server:\n  auth_token: \"{password}\"\naccounts:\n  - name: a\n    imap: {{ host: h, username: u, password: \"{password}\" }}\n"
        ))
        .unwrap_err();
        let said = e.problems.join("\n");
        assert!(said.contains("accounts[0].imap.password"), "{said}");
        assert!(said.contains("server.auth_token"), "{said}");
        assert!(said.contains("$${"), "the remedy: {said}");
        for part in kept {
            assert!(!said.contains(part), "{part} in: {said}");
        }
    }
}

/// Issue 20, item 7: a problem never shows what a variable holds.
#[test]
fn problems_quote_the_text_as_written_not_the_variable() {
    let env = |name: &str| match name {
        "TOKEN" => Some("servertoken-\"quoted\"-0123456789".to_string()),
        "P" => Some("local-model".to_string()),
        _ => None,
    };
    let e = parse(
            "server:\n  bind: ${TOKEN}\n  port: \"${TOKEN}\"\naccounts:\n  - name: a\n    provider: \"${P}\"\n    imap: { host: h, username: u, password: \"x-${TOKEN}\" }\n",
            &env,
        )
        .unwrap_err();
    let all = e.problems.join("\n");
    assert!(
        !all.contains("servertoken") && !all.contains("local-model"),
        "{all}"
    );
    assert!(
        all.contains("server.port: invalid type: string \"${TOKEN}\""),
        "{all}"
    );
    let e = parse(
            "server: { bind: \"${TOKEN}\" }\naccounts:\n  - name: a\n    provider: \"${P}\"\n    imap: { host: h, username: u, password: p }\n",
            &env,
        )
        .unwrap_err();
    assert_eq!(
        e.problems,
        [
            "server.bind: expected an IP address such as 127.0.0.1, got \"${TOKEN}\"",
            "accounts[0].provider: no provider named \"${P}\" in classifier.providers",
        ]
    );
}

/// Found by an audit: a whole reference whose text reads as a number
/// took the number's type, and a string key printed it back otherwise:
/// `007` became `7`, `1e3` `1000`, `+5` `5`.
#[test]
fn a_secret_that_reads_as_a_number_keeps_its_text() {
    for pw in ["007", "1e3", "+5", "0.90", "12345", "1.5", "inf"] {
        let env = |name: &str| (name == "PW").then(|| pw.to_string());
        let (c, _) = super::parse(
            "accounts:\n - name: a\n   imap: {host: h, username: u, password: \"${PW}\"}\n",
            &env,
        )
        .unwrap();
        assert_eq!(c.accounts[0].imap.password.as_deref(), Some(pw));
    }
    let env = |name: &str| (name == "PORT").then(|| "8082".to_string());
    let (c, _) = super::parse("server: { port: \"${PORT}\" }\n", &env).unwrap();
    assert_eq!(c.server.port, 8082, "a number still reads as one");
}

#[test]
fn numeric_secret_stays_a_string() {
    let c = parse_str(
        "accounts:\n - name: a\n   imap: {host: h, username: u, password: \"${PASS}\"}\n",
    )
    .unwrap();
    assert_eq!(c.accounts[0].imap.password.as_deref(), Some("123456"));
}

#[test]
fn unknown_key_names_its_path() {
    let e = parse_str("server:\n  prot: 1\n").unwrap_err();
    assert!(
        e.problems[0].starts_with("server.prot: unknown field `prot`"),
        "{e}"
    );
    let e = parse_str(
            "accounts:\n - name: a\n   imap: {host: h, username: u, password: p}\n - name: b\n   imap: {host: h, port: 993x, username: u, password: p}\n",
        )
        .unwrap_err();
    assert!(e.problems[0].starts_with("accounts[1].imap.port:"), "{e}");
}

#[test]
fn validation_lists_every_problem_with_its_path() {
    let e = parse_str(
        r#"
server: { port: 0 }
dashboard:
  session_ttl: 7d
  api_keys:
    - { name: short, key: tooshort, permissions: [read:stats, read:everything] }
classifier:
  providers:
    - { name: p, kind: openai, url: "ftp://x", model: m }
webhooks:
  - { url: "not a url" }
accounts:
  - name: a
    imap: { host: h, username: u, password: p }
    provider: missing
    rules:
      - name: r
        when: { subject: "(" }
        actions: [ { type: move, folder: Nowhere } ]
  - name: a
    imap: { host: h, username: u, password: p }
"#,
    )
    .unwrap_err();
    let want = [
        "server.port:",
        "dashboard.api_keys[0].key: must be at least 16",
        "dashboard.api_keys[0].permissions[1]: unknown permission",
        "classifier.providers[0].url:",
        "webhooks[0].url:",
        "accounts[0].provider: no provider named \"missing\"",
        "accounts[0].rules[0].when.subject: invalid regex",
        "accounts[0].rules[0].actions[0]: folder \"Nowhere\"",
        "accounts[1].name: duplicate account name",
    ];
    for w in want {
        assert!(
            e.problems.iter().any(|p| p.starts_with(w)),
            "missing {w:?} in {e}"
        );
    }
    assert_eq!(e.problems.len(), want.len(), "{e}");
}

#[test]
fn a_wrong_type_is_named_in_words_not_rust_types() {
    let e = parse_str(
        "server: { port: imap, workers: 2.5 }\n\
             accounts:\n  - { name: a, imap: { host: h, port: 70000, username: u, password: p }, \
             learned: { min_confidence: yes } }\n",
    )
    .unwrap_err();
    for want in [
        "server.port: invalid type: string \"imap\", expected integer (0 to 65535)",
        "server.workers: invalid type: floating point `2.5`, expected integer (0 or more)",
        "accounts[0].imap.port: invalid value: integer `70000`, expected integer (0 to 65535)",
        "accounts[0].learned.min_confidence: invalid type: string \"yes\", expected number",
    ] {
        assert!(
            e.problems.iter().any(|p| p == want),
            "{want}: {:#?}",
            e.problems
        );
    }
    // Anything else serde says is left as it is.
    assert_eq!(plain_types("expected a boolean"), "expected a boolean");
    assert_eq!(plain_types("expected u16x"), "expected u16x");
    assert_eq!(plain_types("no expectation"), "no expectation");
}

#[test]
fn unsendable_header_values_and_passwords_are_refused() {
    let e = parse_str(
        "webhooks: [ { url: \"https://h.example/x\", headers: { X-Token: \"a\\u0001b\", Host: h } } ]\n\
             classifier: { providers: [ { name: p, kind: openai, url: \"https://m.example/v1\", model: m, api_key: \"sk\\nx\" } ] }\n\
             accounts:\n  - name: a\n    imap: { host: h, username: u, password: \"pw\\n\" }\n",
    )
    .unwrap_err();
    let all = e.problems.join("\n");
    assert!(
        all.contains("webhooks[0].headers.Host: written by the HTTP client itself"),
        "{all}"
    );
    assert!(
        all.contains("classifier.providers[0].api_key: not a valid header value"),
        "{all}"
    );
    assert!(!all.contains("sk\nx"), "{all}");
    assert!(
        all.contains("webhooks[0].headers.X-Token: not a valid header value"),
        "{all}"
    );
    assert!(
        all.contains("accounts[0].imap.password: holds a line break or NUL"),
        "{all}"
    );
    assert!(!all.contains("a\u{1}b") && !all.contains("pw\n"), "{all}");
}

#[test]
fn unsendable_keys_are_refused_with_their_path() {
    let e = parse_str(
        "server: { auth_token: \"token with a space in it\" }\n\
             dashboard:\n  api_keys:\n    - { name: k, key: \"éééééééééééééééé\" }\n\
             accounts: []\n",
    )
    .unwrap_err();
    let all = e.problems.join("\n");
    assert!(
        all.contains("server.auth_token: must be visible ASCII characters only")
            && all.contains("has a space at character 6"),
        "{all}"
    );
    assert!(
        all.contains("dashboard.api_keys[0].key: must be visible ASCII characters only")
            && all.contains("has a character outside ASCII at character 1")
            && !all.contains('é'),
        "{all}"
    );
    let e = parse_str(
        "dashboard:\n  api_keys:\n    - { name: k, key: abcdefghijklmnop0123, permissions: [] }\n\
             accounts: []\n",
    )
    .unwrap_err();
    assert!(
        e.problems
            .iter()
            .any(|p| p.starts_with("dashboard.api_keys[0].permissions: empty grants nothing")),
        "{e}"
    );
    // Every printable ASCII character is fine.
    let ok = parse_str("server: { auth_token: \"A-z0~9!#$%&'*+./^_`|=\" }\naccounts: []\n");
    assert!(ok.is_ok(), "{:?}", ok.err());
}

#[test]
fn trusted_proxies_parse_once_with_their_path() {
    let c = parse_str("server: { trusted_proxies: [10.1.2.3, \"192.168.0.0/16\"] }").unwrap();
    assert_eq!(c.server.trusted_proxies.len(), 2);
    // The IPv4-mapped spelling is the IPv4 net, as a peer is compared (the
    // IPv6 audit: `::ffff:127.0.0.1` never matched).
    let mapped = parse_str(
        "server: { trusted_proxies: [\"::ffff:127.0.0.1\", \"::ffff:10.0.0.0/104\", \"::1\"] }",
    )
    .unwrap();
    let shown: Vec<String> = mapped
        .server
        .trusted_proxies
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(shown, ["127.0.0.1/32", "10.0.0.0/8", "::1/128"]);
    assert!(c.server.trusted_proxies[0].contains(&"10.1.2.3".parse::<IpAddr>().unwrap()));
    let e = parse_str("server: { trusted_proxies: [proxy.example] }").unwrap_err();
    assert!(e.problems[0].starts_with("server.trusted_proxies"), "{e}");
    let e = parse_str("server: { trusted_proxies: [bad, 10.0.0.0/33, 10.0.0.1, also bad] }")
        .unwrap_err();
    assert_eq!(
        e.problems,
        [
            "server.trusted_proxies: expected addresses or CIDRs such as 127.0.0.1/32; not one: \
          [0] \"bad\", [1] \"10.0.0.0/33\", [3] \"also bad\""
        ]
    );
}

#[test]
fn durations() {
    for (s, secs) in [
        ("30s", 30),
        ("30m", 1800),
        ("4h", 14_400),
        ("24h", 86_400),
        ("7d", 604_800),
        ("30d", 2_592_000),
    ] {
        assert_eq!(parse_duration(s).unwrap(), Duration::from_secs(secs));
    }
    assert!(parse_duration("7w").is_err());
    assert!(parse_duration("h").is_err());
    // Written back as the configuration writes it, and read back the same.
    for (d, text) in [
        (Duration::from_secs(90), "90s"),
        (Duration::from_secs(3600), "1h"),
        (Duration::from_secs(7 * 86_400), "7d"),
        (Duration::from_secs(120), "2m"),
        (Duration::from_millis(1500), "1500ms"),
        (Duration::ZERO, "0s"),
    ] {
        assert_eq!(format_duration(d), text);
        assert_eq!(parse_duration(text).unwrap(), d);
    }
    let e = parse_str("dashboard: { session_ttl: 3 weeks }").unwrap_err();
    assert!(
        e.problems[0].starts_with("dashboard.session_ttl: expected a duration"),
        "{e}"
    );
}

#[test]
fn backlog_forms() {
    let acc = |b: &str| {
        parse_str(&format!(
                "accounts:\n - name: a\n   backlog: \"{b}\"\n   imap: {{host: h, username: u, password: p}}\n"
            ))
            .map(|c| c.accounts[0].backlog)
    };
    assert_eq!(acc("all").unwrap(), Backlog::All);
    assert_eq!(acc("new_only").unwrap(), Backlog::NewOnly);
    assert_eq!(acc("recent:100").unwrap(), Backlog::Recent(100));
    assert_eq!(
        acc("since:7d").unwrap(),
        Backlog::Since(Duration::from_secs(604_800))
    );
    assert!(acc("some").unwrap_err().problems[0].starts_with("accounts[0].backlog:"));
}

#[test]
fn redaction_masks_literals_and_keeps_references() {
    let (_, raw) = parse(
            r#"
server: { auth_token: literal-token-123456 }
dashboard: { api_keys: [ { name: k, key: "${TOKEN}" } ] }
webhooks: [ { url: "https://h.example/x", headers: { Authorization: "Bearer secretvalue", X-Ref: "Bearer ${TOKEN}" } } ]
accounts:
  - name: a
    imap: { host: h, username: u, password: hunter2 }
"#,
            &env,
        )
        .unwrap();
    let j = redacted_json(&raw);
    assert_eq!(j["server"]["auth_token"], MASK);
    assert_eq!(j["dashboard"]["api_keys"][0]["key"], "${TOKEN}");
    assert_eq!(j["webhooks"][0]["headers"]["Authorization"], MASK);
    assert_eq!(j["webhooks"][0]["headers"]["X-Ref"], "Bearer ${TOKEN}");
    assert_eq!(j["accounts"][0]["imap"]["password"], MASK);
    assert_eq!(j["accounts"][0]["imap"]["username"], "u");
    let text = j.to_string();
    assert!(
        !text.contains("hunter2")
            && !text.contains("secretvalue")
            && !text.contains("literal-token")
    );
}

#[test]
fn oauth2_secrets_are_masked_and_references_kept() {
    let (_, raw) = parse(
            r#"
accounts:
  - name: a
    imap:
      host: h
      username: u
      auth: oauth2
      oauth2: { preset: google, client_id: cid, client_secret: literal-secret, refresh_token: "${TOKEN}" }
"#,
            &env,
        )
        .unwrap();
    let j = redacted_json(&raw);
    let o = &j["accounts"][0]["imap"]["oauth2"];
    assert_eq!(o["client_secret"], MASK);
    assert_eq!(o["refresh_token"], "${TOKEN}");
    assert_eq!(o["client_id"], "cid");
    assert!(!j.to_string().contains("literal-secret"));
}

#[test]
fn imap_auth_needs_what_it_uses() {
    let acc = |imap: &str| parse_str(&format!("accounts:\n  - name: a\n    imap: {imap}\n"));
    // Password is the default and then required.
    let e = acc("{ host: h, username: u }").unwrap_err();
    assert_eq!(
        e.problems,
        ["accounts[0].imap.password: required with auth: password"]
    );
    // Empty, as written or from a variable set to nothing (an audit: every
    // login failed after check-config's "ok").
    let e = acc("{ host: h, username: u, password: \"\" }").unwrap_err();
    assert_eq!(
        e.problems,
        ["accounts[0].imap.password: empty (a variable set to nothing?); write the password"]
    );
    let e = acc("{ host: h, username: u, auth: oauth2 }").unwrap_err();
    assert!(
        e.problems[0].starts_with("accounts[0].imap.oauth2: required"),
        "{e}"
    );
    let e = acc("{ host: h, username: u, auth: oauth2, password: p, oauth2: { client_id: c } }")
        .unwrap_err();
    let p = e.problems.join("\n");
    assert!(
        p.contains("accounts[0].imap.password: not used with auth: oauth2"),
        "{p}"
    );
    assert!(
        p.contains("accounts[0].imap.oauth2.token_url: required unless a preset"),
        "{p}"
    );
    assert!(
        p.contains(
            "accounts[0].imap.oauth2.refresh_token: required; get one with `mailproc oauth a`"
        ),
        "{p}"
    );
    let c = acc("{ host: h, username: u, auth: oauth2, oauth2: { preset: microsoft, client_id: c, refresh_token: r } }")
            .unwrap();
    let o = c.accounts[0].imap.oauth2.as_ref().unwrap();
    assert_eq!(
        o.token_url(),
        Some("https://login.microsoftonline.com/common/oauth2/v2.0/token")
    );
    assert_eq!(
        o.scope(),
        Some("https://outlook.office.com/IMAP.AccessAsUser.All offline_access")
    );
    assert!(o.client_secret.is_none());
    let e = acc("{ host: h, username: u, auth: oauth2, oauth2: { preset: yahoo, client_id: c } }")
        .unwrap_err();
    assert!(e.problems[0].contains("unknown variant `yahoo`"), "{e}");
}

#[test]
fn the_refresh_token_variable_is_named_for_the_helper() {
    let (_, raw) = parse(
            "accounts:\n  - name: a\n    imap: { host: h, username: u, auth: oauth2, oauth2: { preset: google, client_id: c, refresh_token: \"${TOKEN}\" } }\n",
            &env,
        )
        .unwrap();
    assert_eq!(refresh_token_variable(&raw, "a").as_deref(), Some("TOKEN"));
    assert_eq!(refresh_token_variable(&raw, "b"), None);
}

#[test]
fn the_helper_loads_without_the_refresh_token_it_is_to_get() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(
            &path,
            "accounts:\n  - name: a\n    imap: { host: h, username: u, auth: oauth2, oauth2: { preset: google, client_id: c, refresh_token: \"${MAILPROC_TEST_UNSET_9F2}\" } }\n  - name: b\n    imap: { host: h, username: u, auth: oauth2, oauth2: { preset: google, client_id: c } }\n",
        )
        .unwrap();
    let e = load(&path).unwrap_err();
    assert!(
        e.problems[0].contains("MAILPROC_TEST_UNSET_9F2 is not set"),
        "{e}"
    );
    let l = load_for_oauth_helper(&path).unwrap();
    assert_eq!(l.config.accounts.len(), 2);
    // Anything else is still checked.
    std::fs::write(&path, "accounts:\n  - name: a\n    imap: { host: h, username: u, auth: oauth2, oauth2: { client_id: c } }\n").unwrap();
    let e = load_for_oauth_helper(&path).unwrap_err();
    assert_eq!(
            e.problems,
            ["accounts[0].imap.oauth2.token_url: required unless a preset (google or microsoft) is set"]
        );
}

#[test]
fn actions_round_trip_as_spec_objects() {
    let a: Action = serde_json::from_str(r#"{"type":"move","folder":"X"}"#).unwrap();
    assert_eq!(a, Action::Move { folder: "X".into() });
    assert_eq!(
        serde_json::to_string(&Action::Read).unwrap(),
        r#"{"type":"read"}"#
    );
    assert_eq!(
        serde_json::to_string(&Action::Flag {
            flags: vec!["\\Flagged".into()]
        })
        .unwrap(),
        r#"{"type":"flag","flags":["\\Flagged"]}"#
    );
    assert!(serde_json::from_str::<Action>(r#"{"type":"delete"}"#).is_err());
    // A key the type does not take is an error for every type; it was
    // ignored for the types without settings.
    for (text, field) in [
        (r#"{"type":"read","zz":1}"#, "zz"),
        (r#"{"type":"noop","folder":"X"}"#, "folder"),
        (r#"{"type":"spam","flags":["\\Seen"]}"#, "flags"),
        (r#"{"type":"trash","zz":1}"#, "zz"),
        (r#"{"type":"move","folder":"X","flgs":[]}"#, "flgs"),
    ] {
        let e = serde_json::from_str::<Action>(text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("unknown field `{field}`")),
            "{text}: {e}"
        );
    }
    assert_eq!(
        serde_json::from_str::<Action>(r#"{"type":"read"}"#).unwrap(),
        Action::Read
    );
    // And in a configuration file, with the path of the action.
    let e = parse_str(
        "accounts:\n  - name: a\n    imap: { host: h, username: u, password: p }\n    \
             rules: [ { name: r, when: { subject: x }, actions: [ { type: read, zz: 1 } ] } ]\n",
    )
    .unwrap_err();
    assert!(
        e.problems
            .iter()
            .any(|p| p.starts_with("accounts[0].rules[0].actions[0]") && p.contains("zz")),
        "{e}"
    );
}

/// Found by an audit of the binary: a key with another key's value was
/// accepted and never used (the first key of that value is the one found).
#[test]
fn a_key_value_is_one_grant() {
    let e = parse_str(
        "server: { auth_token: abcdefghijklmnopqrstuv }\n\
         dashboard: { api_keys: [ { name: a, key: 0123456789abcdef, permissions: [read:stats] },\n\
           { name: b, key: 0123456789abcdef, permissions: ['*'] },\n\
           { name: c, key: abcdefghijklmnopqrstuv } ] }\n",
    )
    .unwrap_err();
    for want in [
        "dashboard.api_keys[1].key: the same key as dashboard.api_keys[0] (\"a\"); each key must be its own",
        "dashboard.api_keys[2].key: the same as server.auth_token; each key must be its own",
    ] {
        assert!(e.problems.iter().any(|p| p == want), "{want}: {:#?}", e.problems);
    }
    assert!(
        !e.problems.iter().any(|p| p.contains("0123456789abcdef")),
        "a key's value in a problem: {:#?}",
        e.problems
    );
}

/// A third regression audit: a stream was told by the path as written,
/// so `../../dev/stdin` and a link to `/dev/stdin` passed for files, and
/// a file under `/dev/shm` was taken for a stream.
#[test]
fn a_stream_is_told_by_where_its_path_leads() {
    for p in [
        "/dev/stdin",
        "/dev/fd/63",
        "/proc/self/fd/0",
        "/tmp/../dev/stdin",
    ] {
        assert!(from_stream(Path::new(p)).is_some(), "{p}");
    }
    for p in [
        "/dev/../tmp/c.yaml",
        "/dev/shm/c.yaml",
        "/etc/mailproc/config.yaml",
    ] {
        assert!(from_stream(Path::new(p)).is_none(), "{p}");
    }
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("config.yaml");
    std::os::unix::fs::symlink("/dev/stdin", &link).unwrap();
    assert!(from_stream(&link).is_some());
    let relative = dir.path().join("rel.yaml");
    std::os::unix::fs::symlink("../../../../../../../../dev/fd/0", &relative).unwrap();
    assert!(from_stream(&relative).is_some());
}

/// `check-config`'s second look at a file that did not load, for its
/// storage path (review, stop 59): the bounded parser, so a file of
/// aliases the loader refused is refused here too rather than expanded.
#[test]
fn the_storage_path_of_a_file_that_did_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let named = at("named.yaml", "storage: { path: /srv/m/m.db }\nbad: [\n");
    assert_eq!(storage_path_of(&named), None, "not YAML");
    let named = at("named.yaml", "storage: { path: /srv/m/m.db }\nserver: 7\n");
    assert_eq!(storage_path_of(&named), Some("/srv/m/m.db".into()));
    let none = at("none.yaml", "server: 7\n");
    assert_eq!(storage_path_of(&none), Some(StorageConfig::default().path));
    let a = vec!["x"; 1000].join(", ");
    let b = vec!["*a"; 1000].join(", ");
    let c = vec!["*b"; 100].join(", ");
    let bomb = at(
        "bomb.yaml",
        &format!("storage: {{ path: /srv/m/m.db }}\na: &a [{a}]\nb: &b [{b}]\nc: [{c}]\n"),
    );
    assert_eq!(storage_path_of(&bomb), None);
    assert_eq!(storage_path_of(dir.path()), None, "a directory");
}
