//! The typed shape of `config.yaml`: every section as a struct that rejects
//! unknown keys, with its defaults (an account's own sections are in
//! `account`). What types cannot check is `validate`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize};

use super::parse_net;
use crate::actions::{Action, ActionKind};

mod account;
pub use account::*;

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
    Ok(entries
        .iter()
        .filter_map(|n| parse_net(n))
        .map(unmapped)
        .collect())
}

/// An IPv4-mapped net (`::ffff:127.0.0.1`, `::ffff:10.0.0.0/104`) as the
/// IPv4 net it is: a peer's address is compared in its IPv4 form, so the
/// mapped spelling of a trusted proxy never matched (the IPv6 audit).
fn unmapped(n: IpNet) -> IpNet {
    match n {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
            Some(v4) => ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96)
                .map(IpNet::V4)
                .unwrap_or(n),
            None => n,
        },
        n => n,
    }
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
