//! The binary from the shell: its port chosen and taken, `check` listing
//! every problem of a config, the shipped example config, `--version`.

mod common;

use common::mailproc::Mailproc;

/// The harness, as every test starts mailproc: a `{PORT}` chosen free but
/// taken before mailproc binds it (by another test's connection, which
/// takes its local port from the same range) is chosen again, and the
/// start goes on. A full run failed once on that race.
#[test]
fn a_port_taken_after_it_was_chosen_is_chosen_again() {
    let mut m =
        Mailproc::prepare("server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n");
    let first = m.port;
    let taken = std::net::TcpListener::bind(("127.0.0.1", first)).unwrap();
    m.spawn(&[]);
    m.wait_ready();
    assert_ne!(m.port, first);
    assert_eq!(m.get("/health").status, 200);
    assert!(!m.log().contains("address in use"), "{}", m.log());
    drop(taken);
}

#[test]
fn port_in_use_ends_start_up() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let m = Mailproc::prepare(&format!(
        "server: {{ port: {port} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n"
    ));
    let (code, _, stderr) = m.run_cli(&["run"], "");
    assert_ne!(code, 0);
    assert!(
        stderr.contains(&format!("address in use: 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(
        !m.db_path().exists(),
        "nothing else may start: the store was created"
    );
}

#[test]
fn check_config_lists_every_problem() {
    let m = Mailproc::prepare("server: { port: 70000 }\n");
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1);
    assert!(err.contains("server.port:"), "{err}");
    let m = Mailproc::prepare(
        r#"
dashboard: { api_keys: [ { name: a, key: short, permissions: [read:nope] } ] }
accounts:
  - { name: x, imap: { host: h, username: u, password: p }, provider: ghost }
  - { name: x, imap: { host: h, username: u, password: "${UNSET_VAR_FOR_TEST:-p}" } }
"#,
    );
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1);
    for want in [
        "dashboard.api_keys[0].key: must be at least 16",
        "dashboard.api_keys[0].permissions[0]: unknown permission \"read:nope\"",
        "accounts[0].provider: no provider named \"ghost\"",
        "accounts[1].name: duplicate account name \"x\"",
    ] {
        assert!(err.contains(want), "missing {want:?} in\n{err}");
    }
    let m = Mailproc::prepare("server: { auth_token: \"${SURELY_UNSET_TOKEN_VAR}\" }\n");
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("server.auth_token: environment variable SURELY_UNSET_TOKEN_VAR is not set"),
        "{err}"
    );
}

#[test]
fn example_config_validates() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.yaml");
    let out = std::process::Command::new(common::mailproc::bin())
        .args(["--config", example, "check-config"])
        .env("MAILPROC_TOKEN", "example-token-0123456789")
        .env("GRAFANA_KEY", "grafana-key-0123456789")
        .env("HOOK_TOKEN", "t")
        .env("PERSONAL_IMAP_PASSWORD", "p")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("ok (1 account(s), 1 provider(s), 1 API key(s))"));
}

#[test]
fn version_flag() {
    let out = std::process::Command::new(common::mailproc::bin())
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("mailproc {}", env!("CARGO_PKG_VERSION"))
    );
}
