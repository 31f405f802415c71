//! The typed shape of `config.yaml`: every section as a struct that rejects
//! unknown keys, with its defaults. What types cannot check is `validate`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize};

use super::parse_net;
use crate::actions::{Action, ActionKind};

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

/// A duration as the configuration writes it, the largest unit that
/// divides it evenly (`90s`, `3600s` → `1h`, `1500ms`): what
/// [`parse_duration`] reads back.
pub fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() != 0 {
        return format!("{}ms", d.as_millis());
    }
    let s = d.as_secs();
    for (unit, n) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if s >= n && s % n == 0 {
            return format!("{}{unit}", s / n);
        }
    }
    format!("{s}s")
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
        Null(()),
    }
    // serde's own words here ("did not match any variant of untagged
    // enum Scalar") tell an operator nothing.
    let scalar = Scalar::deserialize(d).map_err(|_| {
        serde::de::Error::custom("invalid type: expected a string (a list or a mapping is not one)")
    })?;
    Ok(match scalar {
        Scalar::S(s) => s,
        Scalar::I(i) => i.to_string(),
        Scalar::U(u) => u.to_string(),
        Scalar::F(f) => f.to_string(),
        Scalar::B(b) => b.to_string(),
        // `auth_token:` with nothing after it (an audit found it called a
        // list or a mapping).
        Scalar::Null(()) => {
            return Err(serde::de::Error::custom(
                "no value: write one, or leave the key out",
            ))
        }
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

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub port: u16,
    #[serde(deserialize_with = "de_string")]
    pub bind: String,
    #[serde(deserialize_with = "de_opt_string")]
    pub auth_token: Option<String>,
    pub workers: usize,
    /// HTTP connections alive at once; beyond it the one waiting longest
    /// for a request head is shed, or the newcomer refused (503).
    pub max_connections: usize,
    /// Peers whose `X-Forwarded-*` headers are believed (none by default;
    /// never in open mode). Parsed once here: the HTTP workers consult it
    /// on every request.
    #[serde(deserialize_with = "de_nets")]
    pub trusted_proxies: Vec<IpNet>,
    /// The URL browsers use to reach the service (through the reverse
    /// proxy). In open mode its host is accepted in `Host` besides loopback.
    #[serde(deserialize_with = "de_opt_string")]
    pub public_url: Option<String>,
}

/// Every entry that is not an address or CIDR is named, with its index
/// (an audit found only the first told, without one).
fn de_nets<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<IpNet>, D::Error> {
    let entries = Vec::<String>::deserialize(d)?;
    let bad: Vec<String> = (entries.iter().enumerate())
        .filter(|(_, n)| parse_net(n).is_none())
        .map(|(i, n)| format!("[{i}] {n:?}"))
        .collect();
    if !bad.is_empty() {
        return Err(serde::de::Error::custom(format!(
            "expected addresses or CIDRs such as 127.0.0.1/32; not one: {}",
            bad.join(", ")
        )));
    }
    Ok(entries.iter().filter_map(|n| parse_net(n)).collect())
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            port: 8080,
            bind: "127.0.0.1".into(),
            auth_token: None,
            workers: 4,
            max_connections: 256,
            // Opt-in: a loopback peer is as likely a browser as a proxy.
            trusted_proxies: Vec::new(),
            public_url: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

/// How a provider's model answers (`answer:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerMode {
    /// A JSON object of actions, reasoning and confidence (the default).
    #[default]
    Json,
    /// One folder among the allowed ones (or keep, or spam), chosen by the
    /// log-probabilities of the model's first answer token: the confidence
    /// is the model's own probability, the answer always valid. Needs an
    /// OpenAI-compatible server that returns `top_logprobs`.
    Choice,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    #[serde(default)]
    pub answer: AnswerMode,
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    pub const ALL: [EventKind; 5] = [
        EventKind::EmailProcessed,
        EventKind::ActionTaken,
        EventKind::Error,
        EventKind::ConnectionLost,
        EventKind::ConnectionRestored,
    ];

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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// How to sign in (default `password`).
    #[serde(default)]
    pub auth: ImapAuth,
    /// Required with `auth: password`; not used with `oauth2`.
    #[serde(default, deserialize_with = "de_opt_string")]
    pub password: Option<String>,
    /// Required with `auth: oauth2`.
    #[serde(default)]
    pub oauth2: Option<OAuth2Config>,
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Read and write time-out of every IMAP command: a server silent for
    /// this long during a fetch, a move or a login counts as gone.
    #[serde(default = "default_imap_timeout")]
    pub timeout: Dur,
    /// IDLE is ended and re-issued this often; the server must answer the
    /// `DONE` and a NOOP within `min(timeout, 20s)` each. Bounds how long a
    /// server that stopped answering without closing the socket goes
    /// unnoticed while idling (interval + 40 s: 100 s by default).
    #[serde(default = "default_idle_interval")]
    pub idle_interval: Dur,
}

fn default_imap_timeout() -> Dur {
    Dur::secs(120)
}

fn default_idle_interval() -> Dur {
    Dur::secs(60)
}

fn default_security() -> Security {
    Security::Tls
}

/// `imap.auth`: a password (LOGIN), or an OAuth2 access token (SASL XOAUTH2
/// or OAUTHBEARER) got from a refresh token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImapAuth {
    #[default]
    Password,
    Oauth2,
}

/// `imap.oauth2.preset`: the well-known endpoints and scope of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuth2Preset {
    Google,
    Microsoft,
}

impl OAuth2Preset {
    pub fn token_url(self) -> &'static str {
        match self {
            OAuth2Preset::Google => "https://oauth2.googleapis.com/token",
            OAuth2Preset::Microsoft => "https://login.microsoftonline.com/common/oauth2/v2.0/token",
        }
    }

    pub fn device_authorization_url(self) -> &'static str {
        match self {
            OAuth2Preset::Google => "https://oauth2.googleapis.com/device/code",
            OAuth2Preset::Microsoft => {
                "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode"
            }
        }
    }

    pub fn scope(self) -> &'static str {
        match self {
            OAuth2Preset::Google => "https://mail.google.com/",
            OAuth2Preset::Microsoft => {
                "https://outlook.office.com/IMAP.AccessAsUser.All offline_access"
            }
        }
    }
}

/// `imap.oauth2`: where and how to get access tokens. Explicit URLs and
/// scope win over the preset's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Config {
    #[serde(default)]
    pub preset: Option<OAuth2Preset>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub token_url: Option<String>,
    /// The device authorization endpoint (RFC 8628), used only by
    /// `mailproc oauth ACCOUNT`.
    #[serde(default, deserialize_with = "de_opt_string")]
    pub device_authorization_url: Option<String>,
    #[serde(deserialize_with = "de_string")]
    pub client_id: String,
    /// Omitted for a public client.
    #[serde(default, deserialize_with = "de_opt_string")]
    pub client_secret: Option<String>,
    /// Required to run; may be absent only while `mailproc oauth` gets it.
    #[serde(default, deserialize_with = "de_opt_string")]
    pub refresh_token: Option<String>,
    #[serde(default, deserialize_with = "de_opt_string")]
    pub scope: Option<String>,
    /// Extra trust root for a token endpoint with a private CA; when set,
    /// only it is trusted for the token requests.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

impl OAuth2Config {
    /// The token endpoint: `token_url`, else the preset's.
    pub fn token_url(&self) -> Option<&str> {
        self.token_url
            .as_deref()
            .or(self.preset.map(OAuth2Preset::token_url))
    }

    pub fn device_authorization_url(&self) -> Option<&str> {
        self.device_authorization_url
            .as_deref()
            .or(self.preset.map(OAuth2Preset::device_authorization_url))
    }

    /// The scope asked for: `scope`, else the preset's, else none.
    pub fn scope(&self) -> Option<&str> {
        self.scope
            .as_deref()
            .or(self.preset.map(OAuth2Preset::scope))
    }
}

impl ImapConfig {
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.security {
            Security::Tls => 993,
            Security::Starttls | Security::None => 143,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FoldersConfig {
    pub watch: Vec<String>,
    pub allowed: Vec<String>,
    pub create: bool,
    /// Where `spam` moves mail. Unset: the folder the server marks `\Junk`
    /// (SPECIAL-USE, RFC 6154), else one named like a junk folder, else
    /// `Junk`.
    pub junk: Option<String>,
}

impl Default for FoldersConfig {
    fn default() -> Self {
        FoldersConfig {
            watch: vec!["INBOX".into()],
            allowed: Vec::new(),
            create: true,
            junk: None,
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

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    #[serde(deserialize_with = "de_string")]
    pub name: String,
    pub when: RuleWhen,
    pub actions: Vec<Action>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// The actions the model may take, of `allowed_actions` (default: all
    /// of them); rules and the learned classifier keep `allowed_actions`.
    /// Without `spam` the model cannot move mail to a folder named Junk
    /// either.
    #[serde(default)]
    pub model_actions: Option<Vec<ActionKind>>,
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
    /// The classifier learned from the account's own folders (`learn`).
    #[serde(default)]
    pub learned: LearnedConfig,
}

/// `learned:` of an account: whether the classifier trained on the
/// account's folders decides before the model, and how sure it must be.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnedConfig {
    /// Off by default: routing changes only when the operator asks for it
    /// (after `mailproc train`). Training itself works either way.
    pub enabled: bool,
    /// The classifier decides only at or above this confidence; below, the
    /// model does (or, with no model, the message is recorded for review).
    pub min_confidence: f64,
    /// When set, the confidence the classifier's verdict that a message
    /// belongs in the junk folder needs instead of `min_confidence` (below
    /// it the model decides, or the message is recorded for review).
    pub spam_confidence: Option<f64>,
    /// When set, the classifier's verdict that a message belongs in the
    /// junk folder, at or above this confidence, comes before a rule that
    /// would file it into another folder (spam that came through a mailing
    /// list is not the list's mail). Rules that say spam, or only flag or
    /// mark, keep their place. Off by default.
    pub spam_first: Option<f64>,
}

impl Default for LearnedConfig {
    fn default() -> Self {
        LearnedConfig {
            enabled: false,
            min_confidence: DEFAULT_LEARNED_MIN_CONFIDENCE,
            spam_confidence: None,
            spam_first: None,
        }
    }
}

/// The default `learned.min_confidence` (see docs/quality.md for how it
/// was chosen).
pub const DEFAULT_LEARNED_MIN_CONFIDENCE: f64 = 0.9;

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

    /// The account as the model may act on it: `allowed_actions` cut to
    /// `model_actions`, and without `spam` no junk folder: not
    /// `folders.junk`, nor a folder one of whose levels is named as junk
    /// folders usually are (`Junk`, `Spam/Old`, `Junk E-mail`…); the folder
    /// the server marks `\Junk` is kept from it at run time
    /// ([`AccountConfig::keep_from_model`]). An audit moved
    /// mail to `folders.junk: Spam` by a model without `spam`: only a folder
    /// named `Junk` was kept from it. `None` when `model_actions` is not
    /// set (the account as it is).
    pub fn for_model(&self) -> Option<AccountConfig> {
        use crate::mailbox::special_use::SpecialUse;
        let only = self.model_actions.as_ref()?;
        let mut a = self.clone();
        a.allowed_actions.retain(|k| only.contains(k));
        if !a.allows(ActionKind::Spam) {
            let junk = self.folders.junk.clone();
            let usual = |level: &str| {
                SpecialUse::Junk
                    .usual_names()
                    .iter()
                    .any(|n| n.to_lowercase() == level.to_lowercase())
            };
            a.folders
                .allowed
                .retain(|f| !f.split(['/', '.']).any(usual));
            if let Some(j) = &junk {
                a.keep_from_model(j);
            }
        }
        Some(a)
    }

    /// Drops `junk` (the account's junk folder, as configured or as the
    /// server marks it `\Junk`) and the folders in it from what the model
    /// may move to, when it may not `spam`.
    pub fn keep_from_model(&mut self, junk: &str) {
        if self.allows(ActionKind::Spam) {
            return;
        }
        let j = junk.to_lowercase();
        self.folders.allowed.retain(|f| {
            let f = f.to_lowercase();
            !(f == j || f.starts_with(&format!("{j}/")) || f.starts_with(&format!("{j}.")))
        });
    }
}

impl Config {
    /// Open mode: neither `server.auth_token` nor `dashboard.api_keys`, so
    /// every endpoint is anyone's (see `auth`).
    pub fn api_is_open(&self) -> bool {
        self.server.auth_token.is_none() && self.dashboard.api_keys.is_empty()
    }

    /// The names of the configured accounts, in the file's order.
    pub fn account_names(&self) -> Vec<&str> {
        self.accounts.iter().map(|a| a.name.as_str()).collect()
    }
}

impl crate::actions::Permits for AccountConfig {
    fn name(&self) -> &str {
        &self.name
    }

    fn allows(&self, kind: ActionKind) -> bool {
        AccountConfig::allows(self, kind)
    }

    fn allowed_folders(&self) -> &[String] {
        &self.folders.allowed
    }
}
