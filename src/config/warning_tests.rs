//! What `check-config` and the start warn of, and a change tells
//! (`config::warnings`): each by the key it is about.

use super::problem_tests::parse_str;
use super::*;

/// Found by an audit: `trusted_proxies` in open mode does nothing, and
/// nothing said so.
#[test]
fn trusted_proxies_without_authentication_is_a_warning() {
    let open = parse_str("server: { trusted_proxies: [127.0.0.1] }\naccounts: []\n").unwrap();
    let w = warnings(&open).join("\n");
    assert!(
        w.contains("server.trusted_proxies: ignored while neither"),
        "{w}"
    );
    let closed = parse_str(
        "server: { trusted_proxies: [127.0.0.1], auth_token: a-token-0123456789abcdef }\naccounts: []\n",
    )
    .unwrap();
    assert!(warnings(&closed).is_empty(), "{:?}", warnings(&closed));
}

/// Found by the first-hour audit (stop 59): an API open on every
/// interface was said only by `run`; `check-config` said "ok".
#[test]
fn an_open_api_off_loopback_is_a_warning() {
    let wide = parse_str("server: { bind: 0.0.0.0, port: 8081 }\naccounts: []\n").unwrap();
    let w = warnings(&wide).join("\n");
    assert!(
        w.contains("anyone who reaches 0.0.0.0:8081 can read and change everything"),
        "{w}"
    );
    let local = parse_str("server: { bind: 127.0.0.1 }\naccounts: []\n").unwrap();
    assert!(warnings(&local).is_empty(), "{:?}", warnings(&local));
    let closed =
        parse_str("server: { bind: \"::\", auth_token: a-token-0123456789abcdef }\naccounts: []\n")
            .unwrap();
    assert!(warnings(&closed).is_empty(), "{:?}", warnings(&closed));
}

/// Found by a regression audit (stop 60): a relative `storage.path` was
/// checked by check-config against the shell's working directory, and
/// used by the service against its own (the unit's `/`), with no word.
#[test]
fn a_relative_storage_path_is_a_warning() {
    let rel = parse_str("storage: { path: rel/m.db }\naccounts: []\n").unwrap();
    let w = warnings(&rel).join("\n");
    assert!(w.contains("storage.path: rel/m.db is relative"), "{w}");
    let abs = parse_str("storage: { path: /var/lib/m.db }\naccounts: []\n").unwrap();
    assert!(warnings(&abs).is_empty(), "{:?}", warnings(&abs));
}

/// Found by an audit of the rules language (stop 60): a rule on
/// `List-Id:` (the colon a typo) or on a name with 8-bit letters never
/// matched; a rule named " spaced " or with a control character could not
/// be edited in the form; `noop` beside a move was taken and the move done.
/// Each is a warning naming its key: not a problem, as a file that ran
/// before must still start (the regression audit after it).
#[test]
fn rules_that_cannot_work_as_written_are_warnings() {
    let c = parse_str(
        "accounts:\n  - name: a\n    imap: { host: x, username: u, password: p }\n    \
         folders: { allowed: [Lists] }\n    rules:\n      \
         - { name: colon, when: { header: \"List-Id:\" }, actions: [ { type: read } ] }\n      \
         - { name: umlaut, when: { header: \"X-Prüfung\" }, actions: [ { type: read } ] }\n      \
         - { name: \" spaced \", when: { subject: x }, actions: [ { type: read } ] }\n      \
         - { name: \"bell\\u0007\", when: { subject: x }, actions: [ { type: read } ] }\n      \
         - { name: both, when: { subject: y }, actions: [ { type: noop }, { type: move, folder: Lists } ] }\n",
    )
    .unwrap();
    let w = warnings(&c);
    for want in [
        "accounts[0].rules[0].when.header: \"List-Id:\" is no header field name",
        "accounts[0].rules[1].when.header: \"X-Prüfung\" is no header field name",
        "accounts[0].rules[2].name: \" spaced \" begins or ends with white space",
        "accounts[0].rules[3].name: \"bell\\u{7}\" begins or ends with white space",
        "accounts[0].rules[4].actions: noop (keep it where it is) beside another action",
    ] {
        assert!(w.iter().any(|p| p.starts_with(want)), "{want}: {w:#?}");
    }
}
