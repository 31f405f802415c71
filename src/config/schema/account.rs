//! The sections of one account in `config.yaml`: its IMAP server and
//! sign-in (password or OAuth2), folders, backlog, rules, actions and the
//! learned classifier's settings.

use super::*;

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
    /// unnoticed while idling (interval + 20 s: 80 s by default).
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

    /// `host:port` as a URL writes it: an IPv6 address in brackets
    /// (`[::1]:143`; `::1:143` read as one address, the IPv6 audit).
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port())
        } else {
            format!("{}:{}", self.host, self.port())
        }
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
    /// Not configured: the allowed folders [`AccountConfig::for_model`]
    /// and [`AccountConfig::keep_from_model`] took out of the model's
    /// account (its junk and trash folders), for a refusal to say why.
    #[serde(skip)]
    pub kept_from_model: Vec<String>,
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
    /// `model_actions` when set, and without `spam` no junk folder: not
    /// `folders.junk`, nor a folder one of whose levels is named as junk
    /// folders usually are (`Junk`, `Spam/Old`, `Junk E-mail`…); the folder
    /// the server marks `\Junk` is kept from it at run time
    /// ([`AccountConfig::keep_from_model`]). An audit moved
    /// mail to `folders.junk: Spam` by a model without `spam`: only a folder
    /// named `Junk` was kept from it. Without `trash` the same for the
    /// trash folder (`Trash`, `Deleted Items`…, and the one marked
    /// `\Trash`): a model without it trashed mail by a move to
    /// `[Gmail]/Trash` (the layouts audit). Whether `model_actions` is set
    /// or not: an account allowing neither moved mail there by the model
    /// all the same (a regression audit).
    pub fn for_model(&self) -> AccountConfig {
        use crate::mailbox::special_use::SpecialUse;
        let mut a = self.clone();
        if let Some(only) = &self.model_actions {
            a.allowed_actions.retain(|k| only.contains(k));
        }
        for (kind, use_) in [
            (ActionKind::Spam, SpecialUse::Junk),
            (ActionKind::Trash, SpecialUse::Trash),
        ] {
            if a.allows(kind) {
                continue;
            }
            let usual = |level: &str| {
                use_.usual_names()
                    .iter()
                    .any(|n| n.to_lowercase() == level.to_lowercase())
            };
            let (kept, cut): (Vec<String>, Vec<String>) = a
                .folders
                .allowed
                .drain(..)
                .partition(|f| !f.split(['/', '.']).any(usual));
            a.folders.allowed = kept;
            a.kept_from_model.extend(cut);
        }
        if let Some(j) = &self.folders.junk {
            a.keep_from_model(j, ActionKind::Spam);
        }
        a
    }

    /// Drops `folder` (the account's junk or trash folder, as configured or
    /// as the server marks it) and the folders in it from what the model
    /// may move to, when it may not `kind` (`spam`, `trash`).
    pub fn keep_from_model(&mut self, folder: &str, kind: ActionKind) {
        if self.allows(kind) {
            return;
        }
        let j = folder.to_lowercase();
        let (kept, cut): (Vec<String>, Vec<String>) =
            self.folders.allowed.drain(..).partition(|f| {
                let f = f.to_lowercase();
                !(f == j || f.starts_with(&format!("{j}/")) || f.starts_with(&format!("{j}.")))
            });
        self.folders.allowed = kept;
        self.kept_from_model.extend(cut);
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
