//! A service with every kind of credential (`auth_token`, API keys of each
//! permission, literal and `${NAME}` secrets) and two accounts whose
//! server is away: what the API, permission and metrics tests start.

use super::mailproc::Mailproc;

pub const TOKEN: &str = "server-token-0123456789";
pub const STATS_KEY: &str = "stats-key-0123456789";
pub const ACTIVITY_KEY: &str = "activity-key-0123456789";
pub const READ_ALL_KEY: &str = "read-all-key-0123456789";
pub const WRITE_ALL_KEY: &str = "write-all-key-0123456789";
pub const WRITE_ACCOUNTS_KEY: &str = "write-accounts-0123456789";
pub const STAR_KEY: &str = "star-key-0123456789abc";

pub fn secured_config() -> String {
    format!(
        r#"
server: {{ port: {{PORT}}, auth_token: {TOKEN}, workers: 2, trusted_proxies: ["127.0.0.1/32"] }}
storage: {{ path: "{{DIR}}/mailproc.db", activity_retention: 365d }}
dashboard:
  session_ttl: 30m
  api_keys:
    - {{ name: stats, key: {STATS_KEY} }}
    - {{ name: activity, key: {ACTIVITY_KEY}, permissions: [read:activity] }}
    - {{ name: readall, key: {READ_ALL_KEY}, permissions: ["read:*"] }}
    - {{ name: writeall, key: {WRITE_ALL_KEY}, permissions: ["write:*"] }}
    - {{ name: writeaccounts, key: {WRITE_ACCOUNTS_KEY}, permissions: [write:accounts] }}
    - {{ name: star, key: {STAR_KEY}, permissions: ["*"] }}
classifier:
  providers:
    - {{ name: llm, kind: openai, url: "http://127.0.0.1:9/v1/chat/completions", model: m, api_key: sk-literal-provider-key }}
accounts:
  - name: personal
    imap: {{ host: 127.0.0.1, port: 9, security: none, username: me, password: imap-literal-password }}
    folders: {{ allowed: [Receipts] }}
    webhooks:
      - {{ url: "https://hooks.example.com/x", headers: {{ Authorization: "Bearer hook-literal-secret", X-Env: "${{HOOK_ENV}}" }} }}
  - name: work
    imap: {{ host: 127.0.0.1, port: 9, security: none, username: me2, password: "${{WORK_PASS}}" }}
"#
    )
}

pub fn start_secured() -> Mailproc {
    Mailproc::start_with_env(
        &secured_config(),
        &[
            ("HOOK_ENV", "hook-env-value"),
            ("WORK_PASS", "work-env-password"),
        ],
    )
}
