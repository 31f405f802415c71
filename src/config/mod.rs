//! Configuration: `config.yaml` read in two stages, as ripgrep reads its flags.
//!
//! Stage one parses the YAML into a generic tree and replaces `${NAME}` (and
//! `${NAME:-default}`) in every string scalar from the environment; an unset
//! variable without a default is an error naming it and the key that used it.
//! Stage two deserializes the tree into typed structs that reject unknown keys
//! (a typo must never be silently ignored), then `validate` checks what types
//! cannot: lengths, references, regexes, ranges. Every message names the path
//! of the offending key, for example `accounts[1].imap.port: ...`.
//!
//! The unsubstituted tree is kept so that `GET /api/config` can show the file
//! as written, `${NAME}` references included and literal secrets masked.
//!
//! The rooms: `env` resolves `${NAME}`, `validate` checks what types cannot,
//! `redact` decides what of the configuration may leave the process; the
//! action types and their rules live in `crate::actions`.

mod env;
mod redact;
mod validate;

pub use crate::actions::{check_action, Action, ActionKind};
pub use env::substitute;
use env::substitute_tree;
pub use redact::{masked_secret, redact_url, redacted_json};
pub use validate::{read_certificate, validate};

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize};

/// Every permission name of SPEC §5, wildcards included.
pub const PERMISSIONS: &[&str] = &[
    "read:stats",
    "read:activity",
    "read:logs",
    "read:export",
    "read:accounts",
    "read:*",
    "write:stats",
    "write:activity",
    "write:logs",
    "write:export",
    "write:accounts",
    "write:*",
    "*",
];

/// What replaces a literal secret whenever configuration leaves the process.
pub const MASK: &str = "********";

#[derive(Debug)]
pub struct ConfigError {
    /// One line per problem, each starting with the path of the key.
    pub problems: Vec<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    fn one(msg: impl Into<String>) -> ConfigError {
        ConfigError {
            problems: vec![msg.into()],
        }
    }
}

/// A duration written as `30s`, `30m`, `4h`, `24h`, `7d` or `30d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

impl Dur {
    pub const fn secs(s: u64) -> Dur {
        Dur(Duration::from_secs(s))
    }
}

/// Longest duration a setting may hold. Every duration is added to or
/// subtracted from a clock somewhere; ten years is past any sensible
/// setting and keeps that arithmetic far from overflowing.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 366 * 86_400);

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a duration like 30s, 30m, 4h, 7d, got {s:?}"))?;
    let mult = match unit {
        "ms" => return Ok(Duration::from_millis(n)),
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "expected a duration like 30s, 30m, 4h, 7d, got {s:?}"
            ))
        }
    };
    // Saturating: `validate` then reports anything past MAX_DURATION
    // with the others, instead of serde stopping at the first.
    Ok(Duration::from_secs(n.saturating_mul(mult)))
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = de_string(d)?;
        parse_duration(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}

/// Accepts any scalar for a string field: `password: 123456` is a string to
/// the operator, and a `${NAME}` that held digits must not change its type.
fn de_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        S(String),
        I(i64),
        U(u64),
        F(f64),
        B(bool),
    }
    Ok(match Scalar::deserialize(d)? {
        Scalar::S(s) => s,
        Scalar::I(i) => i.to_string(),
        Scalar::U(u) => u.to_string(),
        Scalar::F(f) => f.to_string(),
        Scalar::B(b) => b.to_string(),
    })
}

fn de_opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    de_string(d).map(Some)
}

fn de_string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    struct V(#[serde(deserialize_with = "de_string")] String);
    let m = BTreeMap::<String, V>::deserialize(d)?;
    Ok(m.into_iter().map(|(k, V(v))| (k, v)).collect())
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Least severe level logged (default info); `MAILPROC_LOG` overrides it.
    pub log_level: LogLevel,
    pub server: ServerConfig,
    pub dashboard: DashboardConfig,
    pub storage: StorageConfig,
    pub classifier: ClassifierConfig,
    pub webhook_settings: WebhookSettings,
    pub webhooks: Vec<WebhookConfig>,
    pub accounts: Vec<AccountConfig>,
}

/// `log_level`: serde names the five accepted values when another is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    pub fn filter(self) -> log::LevelFilter {
        match self {
            LogLevel::Error => log::LevelFilter::Error,
            LogLevel::Warn => log::LevelFilter::Warn,
            LogLevel::Info => log::LevelFilter::Info,
            LogLevel::Debug => log::LevelFilter::Debug,
            LogLevel::Trace => log::LevelFilter::Trace,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub port: u16,
    #[serde(deserialize_with = "de_string")]
    pub bind: String,
    #[serde(deserialize_with = "de_opt_string")]
    pub auth_token: Option<String>,
    pub workers: usize,
    /// Parsed once here: the HTTP workers consult it on every request.
    #[serde(deserialize_with = "de_nets")]
    pub trusted_proxies: Vec<IpNet>,
    /// The URL browsers use to reach the service (through the reverse
    /// proxy). In open mode its host is accepted in `Host` besides loopback.
    #[serde(deserialize_with = "de_opt_string")]
    pub public_url: Option<String>,
}

fn de_nets<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|n| {
            parse_net(n).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "expected an address or CIDR such as 127.0.0.1/32, got {n:?}"
                ))
            })
        })
        .collect()
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: 8080,
            bind: "127.0.0.1".into(),
            auth_token: None,
            workers: 4,
            trusted_proxies: vec![
                IpNet::from(IpAddr::from([127, 0, 0, 1])),
                IpNet::from(IpAddr::from(std::net::Ipv6Addr::LOCALHOST)),
            ],
            public_url: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DashboardConfig {
    pub enabled: bool,
    #[serde(deserialize_with = "de_opt_string")]
    pub session_secret: Option<String>,
    pub session_ttl: Dur,
    pub api_keys: Vec<ApiKeyConfig>,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        DashboardConfig {
            enabled: true,
            session_secret: None,
            session_ttl: Dur::secs(24 * 3600),
            api_keys: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    #[serde(deserialize_with = "de_string")]
    pub name: String,
    #[serde(deserialize_with = "de_string")]
    pub key: String,
    #[serde(default = "default_permissions")]
    pub permissions: Vec<String>,
}

fn default_permissions() -> Vec<String> {
    vec!["read:stats".into()]
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    pub path: PathBuf,
    pub activity_retention: Dur,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            path: PathBuf::from("/var/lib/mailproc/mailproc.db"),
            activity_retention: Dur::secs(90 * 86_400),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassifierConfig {
    pub concurrency: usize,
    pub providers: Vec<ProviderConfig>,
}

impl Default for ClassifierConfig {
    fn default() -> Self {
        ClassifierConfig {
            concurrency: 4,
            providers: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Openai,
    Anthropic,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    #[serde(deserialize_with = "de_string")]
    pub name: String,
    pub kind: ProviderKind,
    #[serde(deserialize_with = "de_string")]
    pub url: String,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub api_key: Option<String>,
    #[serde(deserialize_with = "de_string")]
    pub model: String,
    #[serde(default = "default_provider_timeout")]
    pub timeout: Dur,
    #[serde(default)]
    pub rate_limit_rpm: Option<u32>,
    #[serde(default = "default_max_body_chars")]
    pub max_body_chars: usize,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// Extra trust root for a model server with a private CA; when set, only
    /// it is trusted for this provider.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// An HTTP(S) proxy for this provider. Without it, proxy variables of
    /// the environment are ignored: requests go straight to `url`.
    #[serde(default, deserialize_with = "de_opt_string")]
    pub proxy: Option<String>,
}

fn default_provider_timeout() -> Dur {
    Dur::secs(60)
}
fn default_max_body_chars() -> usize {
    4000
}
fn default_max_tokens() -> u32 {
    512
}
fn default_max_retries() -> u32 {
    2
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    pub timeout: Dur,
    pub allow_private: Vec<String>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            timeout: Dur::secs(10),
            allow_private: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    EmailProcessed,
    ActionTaken,
    Error,
    ConnectionLost,
    ConnectionRestored,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::EmailProcessed => "email_processed",
            EventKind::ActionTaken => "action_taken",
            EventKind::Error => "error",
            EventKind::ConnectionLost => "connection_lost",
            EventKind::ConnectionRestored => "connection_restored",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    #[serde(deserialize_with = "de_string")]
    pub url: String,
    /// `None` (omitted) delivers every event type.
    #[serde(default)]
    pub events: Option<Vec<EventKind>>,
    #[serde(default, deserialize_with = "de_string_map")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub secret: Option<String>,
}

impl WebhookConfig {
    pub fn wants(&self, kind: EventKind) -> bool {
        self.events.as_ref().is_none_or(|e| e.contains(&kind))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Security {
    Tls,
    Starttls,
    None,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImapConfig {
    #[serde(deserialize_with = "de_string")]
    pub host: String,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default = "default_security")]
    pub security: Security,
    #[serde(deserialize_with = "de_string")]
    pub username: String,
    #[serde(deserialize_with = "de_string")]
    pub password: String,
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

fn default_security() -> Security {
    Security::Tls
}

impl ImapConfig {
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.security {
            Security::Tls => 993,
            Security::Starttls | Security::None => 143,
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FoldersConfig {
    pub watch: Vec<String>,
    pub allowed: Vec<String>,
    pub create: bool,
}

impl Default for FoldersConfig {
    fn default() -> Self {
        FoldersConfig {
            watch: vec!["INBOX".into()],
            allowed: Vec::new(),
            create: true,
        }
    }
}

/// What to do with mail already in a watched folder the first time it is seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backlog {
    NewOnly,
    All,
    Recent(u32),
    Since(Duration),
}

impl<'de> Deserialize<'de> for Backlog {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = de_string(d)?;
        let bad = || {
            serde::de::Error::custom(format!(
                "expected new_only, all, recent:N or since:DURATION, got {s:?}"
            ))
        };
        match s.as_str() {
            "new_only" => Ok(Backlog::NewOnly),
            "all" => Ok(Backlog::All),
            _ => {
                if let Some(n) = s.strip_prefix("recent:") {
                    n.trim().parse().map(Backlog::Recent).map_err(|_| bad())
                } else if let Some(d) = s.strip_prefix("since:") {
                    parse_duration(d).map(Backlog::Since).map_err(|_| bad())
                } else {
                    Err(bad())
                }
            }
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleWhen {
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    /// A header that must be present.
    #[serde(default)]
    pub header: Option<String>,
    /// Regex the `header` value must match; only with `header`.
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub list_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    #[serde(deserialize_with = "de_string")]
    pub name: String,
    pub when: RuleWhen,
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountConfig {
    #[serde(deserialize_with = "de_string")]
    pub name: String,
    pub imap: ImapConfig,
    #[serde(default)]
    pub folders: FoldersConfig,
    #[serde(default = "default_backlog")]
    pub backlog: Backlog,
    #[serde(default = "default_poll_interval")]
    pub poll_interval: Dur,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default = "default_allowed_actions")]
    pub allowed_actions: Vec<ActionKind>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Wait before the first retry of a failed message; doubles each time.
    #[serde(default = "default_retry_delay")]
    pub retry_delay: Dur,
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
    #[serde(default)]
    pub minimum_confidence: Option<f64>,
    #[serde(default)]
    pub review_flag: Option<String>,
}

fn default_backlog() -> Backlog {
    Backlog::NewOnly
}
fn default_poll_interval() -> Dur {
    Dur::secs(60)
}
fn default_allowed_actions() -> Vec<ActionKind> {
    vec![
        ActionKind::Move,
        ActionKind::Flag,
        ActionKind::Read,
        ActionKind::Spam,
        ActionKind::Noop,
    ]
}
fn default_max_attempts() -> u32 {
    3
}
fn default_retry_delay() -> Dur {
    Dur::secs(60)
}
fn default_max_message_bytes() -> usize {
    1 << 20
}

impl AccountConfig {
    pub fn allows(&self, kind: ActionKind) -> bool {
        self.allowed_actions.contains(&kind)
    }
}

/// A loaded, validated configuration and the file it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The tree as written in the file, before `${NAME}` substitution.
    pub raw: serde_norway::Value,
    pub path: PathBuf,
}

/// Reads, substitutes, deserializes and validates the file at `path`.
pub fn load(path: &Path) -> Result<Loaded, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::one(format!("{}: {e}", path.display())))?;
    let (config, raw) = parse(&text, &|name| std::env::var(name).ok())?;
    Ok(Loaded {
        config,
        raw,
        path: path.to_path_buf(),
    })
}

/// Parses configuration text with `env` as the variable source.
pub fn parse(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Config, serde_norway::Value), ConfigError> {
    let raw: serde_norway::Value = if text.trim().is_empty() {
        serde_norway::Value::Mapping(Default::default())
    } else {
        serde_norway::from_str(text).map_err(|e| ConfigError::one(format!("config: {e}")))?
    };
    let config = from_tree(&raw, env)?;
    Ok((config, raw))
}

/// Stage two and three for an already parsed tree (also used by `PUT /api/config`).
pub fn from_tree(
    raw: &serde_norway::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let mut problems = Vec::new();
    let substituted = substitute_tree(raw, "", env, &mut problems);
    if !problems.is_empty() {
        return Err(ConfigError { problems });
    }
    let config: Config = serde_path_to_error::deserialize(substituted).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        ConfigError::one(if path == "." {
            format!("config: {inner}")
        } else {
            format!("{path}: {inner}")
        })
    })?;
    let problems = validate(&config);
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError { problems })
    }
}

/// Parses an `allow_private` or `trusted_proxies` entry: a CIDR, a bare IP
/// (taken as a single host), or for `allow_private` a host name.
pub fn parse_net(s: &str) -> Option<IpNet> {
    if let Ok(n) = s.parse::<IpNet>() {
        return Some(n);
    }
    s.parse::<IpAddr>().ok().map(IpNet::from)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn log_level_defaults_to_info_and_names_the_choices() {
        assert_eq!(parse_str("").unwrap().log_level, LogLevel::Info);
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

    #[test]
    fn empty_file_gives_defaults() {
        let c = parse_str("").unwrap();
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
        let c = parse_str("server:\n  port: ${NOPE:-7070}\n").unwrap();
        assert_eq!(c.server.port, 7070);
        assert_eq!(substitute("a$${b}c", &env).unwrap(), "a${b}c");
        assert_eq!(
            substitute("Bearer ${TOKEN}!", &env).unwrap(),
            "Bearer abcdefghijklmnopqrstu!"
        );
    }

    #[test]
    fn numeric_secret_stays_a_string() {
        let c = parse_str(
            "accounts:\n - name: a\n   imap: {host: h, username: u, password: \"${PASS}\"}\n",
        )
        .unwrap();
        assert_eq!(c.accounts[0].imap.password, "123456");
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
    fn trusted_proxies_parse_once_with_their_path() {
        let c = parse_str("server: { trusted_proxies: [10.1.2.3, \"192.168.0.0/16\"] }").unwrap();
        assert_eq!(c.server.trusted_proxies.len(), 2);
        assert!(c.server.trusted_proxies[0].contains(&"10.1.2.3".parse::<IpAddr>().unwrap()));
        let e = parse_str("server: { trusted_proxies: [proxy.example] }").unwrap_err();
        assert!(e.problems[0].starts_with("server.trusted_proxies"), "{e}");
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
    }
}
