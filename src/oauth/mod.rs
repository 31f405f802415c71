//! OAuth2 for IMAP sign-in: access tokens from a refresh token (RFC 6749
//! §6), the device authorization grant for the first refresh token
//! (RFC 8628, see `device`), and the SASL messages that carry a token to
//! the server (see `sasl`).
//!
//! Guarantees:
//! - Token requests go through ureq with native-tls, the model calls'
//!   default time-outs (60 s in all, 10 s to connect), no redirects and no
//!   proxy from the environment.
//! - A refresh token the provider rotates is kept in the store (never in the
//!   configuration file, never in a log line) and used from then on, until
//!   the configured refresh token changes (see [`Tokens::refresh_token`]).
//! - A provider's refusal keeps its `error` and `error_description`, so the
//!   account's `lastError` says what the provider said.

pub mod device;
pub mod sasl;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::config::OAuth2Config;
use crate::store::Store;

/// The model calls' default time-out (`classifier.providers[].timeout`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A token is renewed this long before the provider says it expires (less
/// for very short-lived tokens: half their lifetime), so a login never
/// races the expiry and clocks may differ a little.
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);
/// The soonest a token is renewed after it was fetched, whatever lifetime
/// the provider gives: `expires_in: 0` had mailproc fetch a token and sign
/// in again about ten times a second, without end (an audit). The
/// failpoint `min_renewal=MS` shortens it for the tests of short-lived
/// tokens.
const MIN_RENEWAL: Duration = Duration::from_secs(30);

fn min_renewal() -> Duration {
    crate::failpoint::number("min_renewal")
        .map(|ms| Duration::from_millis(ms as u64))
        .unwrap_or(MIN_RENEWAL)
}
/// Lifetime assumed when the token answer has no `expires_in` (RFC 6749
/// makes it optional; Google and Microsoft give one hour).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// The longest lifetime believed: a token is renewed at least daily, and a
/// provider's `expires_in` near `u64::MAX` cannot overflow a deadline.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// The longest `Retry-After` of a token endpoint that is honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// Token answers are small JSON objects; anything larger is not one.
const MAX_ANSWER: u64 = 64 * 1024;

/// Why no access token could be had.
#[derive(Debug)]
#[non_exhaustive]
pub enum OAuthError {
    /// The configuration lacks something (names the key).
    Config(String),
    /// The provider answered with an OAuth error (RFC 6749 §5.2):
    /// `invalid_grant` for a revoked or expired refresh token, and so on.
    Provider {
        status: u16,
        error: String,
        description: Option<String>,
    },
    /// The token endpoint could not be reached or did not answer in time.
    Transport(String),
    /// The token endpoint answered 429 or 5xx (whatever the body): busy or
    /// down, worth trying again, after `retry_after` when it said so.
    Unavailable {
        status: u16,
        retry_after: Option<Duration>,
        /// The provider's OAuth error and description, or what came back.
        detail: String,
    },
    /// The answer was not a token answer (status, and what was wrong).
    BadAnswer(String),
    /// Keeping a rotated refresh token failed.
    Store(crate::store::StoreError),
}

impl OAuthError {
    /// Whether trying again later may help without the operator: network
    /// trouble and provider outages (5xx), not a refused grant.
    pub fn is_transient(&self) -> bool {
        match self {
            OAuthError::Transport(_) | OAuthError::Store(_) | OAuthError::Unavailable { .. } => {
                true
            }
            OAuthError::Provider { status, .. } => *status >= 500 || *status == 429,
            OAuthError::BadAnswer(_) | OAuthError::Config(_) => false,
        }
    }

    /// How long the provider asked us to wait before asking again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            OAuthError::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl std::fmt::Display for OAuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OAuthError::Config(e) => write!(f, "oauth2: {e}"),
            OAuthError::Provider {
                status,
                error,
                description,
            } => {
                write!(f, "oauth2 endpoint refused (HTTP {status}): {error}")?;
                if let Some(d) = description {
                    write!(f, ": {d}")?;
                }
                // What to do (an audit: a revoked token said only that).
                if error == "invalid_grant" {
                    write!(
                        f,
                        " (the refresh token is expired or revoked: get a new one with \
                         `mailproc oauth ACCOUNT`)"
                    )?;
                }
                Ok(())
            }
            // The URL is in `e`: the device authorization endpoint's
            // trouble was told as the token endpoint's (an audit).
            OAuthError::Transport(e) => {
                write!(f, "oauth2: {e}")?;
                if e.contains("certificate verify failed")
                    || e.contains("unable to get local issuer")
                {
                    write!(
                        f,
                        " (a server with a private CA: name its certificate in \
                         imap.oauth2.ca_file)"
                    )?;
                }
                Ok(())
            }
            OAuthError::Unavailable {
                status,
                retry_after,
                detail,
            } => {
                write!(f, "oauth2 endpoint unavailable (HTTP {status}): {detail}")?;
                if let Some(d) = retry_after {
                    write!(f, "; asked to try again after {}s", d.as_secs())?;
                }
                Ok(())
            }
            OAuthError::BadAnswer(e) => write!(f, "oauth2: {e}"),
            OAuthError::Store(e) => write!(f, "oauth2: {e}"),
        }
    }
}

impl std::error::Error for OAuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OAuthError::Store(e) => Some(e),
            _ => None,
        }
    }
}

/// A successful token answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Deserialize)]
pub struct Grant {
    pub access_token: String,
    /// Seconds; a number or a string of digits (Azure AD v1 sends
    /// `"3599"`). Anything else reads as absent, never as an error.
    #[serde(default, deserialize_with = "lenient_seconds")]
    pub expires_in: Option<u64>,
    /// Present when the provider rotates (or, in the device flow, issues)
    /// the refresh token.
    #[serde(default)]
    pub refresh_token: Option<String>,
}

/// `expires_in` as providers send it: a number (huge ones saturate,
/// negative or fractional ones read as absent) or digits in a string.
fn lenient_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        serde_json::Value::String(t) => t.trim().parse::<u64>().ok(),
        _ => None,
    })
}

/// An error answer (RFC 6749 §5.2, RFC 8628 §3.5).
#[derive(Debug, Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// The HTTP side: one agent and the client's identity, for one account.
pub struct Client {
    agent: ureq::Agent,
    token_url: String,
    client_id: String,
    client_secret: Option<String>,
    scope: Option<String>,
}

impl Client {
    pub fn new(c: &OAuth2Config) -> Result<Client, OAuthError> {
        let token_url = c.token_url().ok_or_else(|| {
            OAuthError::Config("token_url is required unless a preset is set".into())
        })?;
        let agent =
            crate::agent::build(c.ca_file.as_deref(), None, REQUEST_TIMEOUT, CONNECT_TIMEOUT)
                .map_err(OAuthError::Config)?;
        Ok(Client {
            agent,
            token_url: token_url.to_string(),
            client_id: c.client_id.clone(),
            client_secret: c.client_secret.clone().filter(|s| !s.is_empty()),
            scope: c.scope().map(str::to_string),
        })
    }

    /// POSTs a form and reads a JSON answer: `Ok` for a 2xx, the provider's
    /// error object for a 4xx or 5xx that carries one.
    fn post<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        form: &[(&str, &str)],
    ) -> Result<T, OAuthError> {
        let mut res = self
            .agent
            .post(url)
            .header("Accept", "application/json")
            .send_form(form.iter().copied())
            .map_err(|e| match e {
                ureq::Error::Timeout(t) => OAuthError::Transport(format!("{url}: timed out ({t})")),
                e => OAuthError::Transport(format!("{url}: {e}")),
            })?;
        let status = res.status().as_u16();
        let retry_after = crate::agent::retry_after(res.headers(), MAX_RETRY_AFTER);
        let text = res
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .lossy_utf8(true)
            .read_to_string()
            .map_err(|e| OAuthError::Transport(format!("{url}: reading the answer: {e}")))?;
        if (200..300).contains(&status) {
            // A grant holds fresh secrets of its own: read, never quoted.
            return serde_json::from_str(&text).map_err(|e| {
                OAuthError::BadAnswer(format!(
                    "{url}: HTTP {status} without a usable JSON answer: {e}"
                ))
            });
        }
        // A refusal is quoted in `lastError`, logs and webhooks: a server
        // (or a proxy) that echoes the request must not carry the refresh
        // token, the client secret or a device code there.
        let secrets: Vec<String> = form
            .iter()
            .filter(|(k, _)| !matches!(*k, "grant_type" | "client_id" | "scope"))
            .map(|(_, v)| v.to_string())
            .chain(crate::agent::url_secrets(url))
            .collect();
        let text = crate::agent::mask_secrets(text, &secrets);
        // Masked again once parsed: JSON may have escaped a secret's
        // characters (`\/` for `/`).
        // And made safe to log, as an IMAP server's words are: control
        // characters escaped, at most 500 characters (a regression audit's
        // endpoint forged a log line with a `\n` in its description).
        let words =
            |t: String| crate::logging::clean_up_to(&crate::agent::mask_secrets(t, &secrets), 500);
        let answer = serde_json::from_str::<ErrorAnswer>(&text).map(|a| ErrorAnswer {
            error: words(a.error),
            error_description: a.error_description.map(words),
        });
        if status == 429 || status >= 500 {
            // Busy or down, whatever the body says (often an HTML page):
            // worth trying again, never the operator's problem.
            return Err(OAuthError::Unavailable {
                status,
                retry_after,
                detail: match answer {
                    Ok(a) => match a.error_description {
                        Some(d) => format!("{}: {d}", a.error),
                        None => a.error,
                    },
                    Err(_) => format!("{url}: no OAuth error object"),
                },
            });
        }
        match answer {
            Ok(a) => Err(OAuthError::Provider {
                status,
                error: a.error,
                description: a.error_description,
            }),
            Err(_) => Err(OAuthError::BadAnswer(format!(
                "{url}: HTTP {status} without an OAuth error object"
            ))),
        }
    }

    /// The client's identity as form fields: `client_id`, and
    /// `client_secret` for a confidential client (RFC 6749 §2.3.1 allows
    /// the body; Google and Microsoft accept it).
    fn with_client<'a>(&'a self, mut form: Vec<(&'a str, &'a str)>) -> Vec<(&'a str, &'a str)> {
        form.push(("client_id", &self.client_id));
        if let Some(s) = &self.client_secret {
            form.push(("client_secret", s));
        }
        form
    }

    /// Trades a refresh token for an access token (RFC 6749 §6).
    pub fn refresh(&self, refresh_token: &str) -> Result<Grant, OAuthError> {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        if let Some(s) = &self.scope {
            form.push(("scope", s));
        }
        let g: Grant = self.post(&self.token_url, &self.with_client(form))?;
        if g.access_token.is_empty() {
            return Err(OAuthError::BadAnswer(format!(
                "{}: empty access_token",
                self.token_url
            )));
        }
        Ok(g)
    }
}

/// SHA-256 of a configured refresh token, hex: recognises the token the
/// store's rotated one descends from, without keeping it a second time.
fn fingerprint(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An access token and when to stop using it.
#[derive(Clone)]
pub struct AccessToken {
    pub token: String,
    /// Past this instant the token is renewed before use.
    pub renew_at: Instant,
    /// When the provider said it expires (at most a day away).
    pub expires_at: Instant,
}

/// One account's tokens, owned by its worker thread.
pub struct Tokens {
    account: String,
    configured: String,
    client: Client,
    store: Arc<Store>,
    current: Option<AccessToken>,
}

impl Tokens {
    pub fn new(account: &str, c: &OAuth2Config, store: Arc<Store>) -> Result<Tokens, OAuthError> {
        let configured = c
            .refresh_token
            .clone()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                OAuthError::Config(format!(
                    "imap.oauth2.refresh_token is not set; get one with `mailproc oauth {account}`"
                ))
            })?;
        Ok(Tokens {
            account: account.to_string(),
            configured,
            client: Client::new(c)?,
            store,
            current: None,
        })
    }

    /// The refresh token to use: the rotated one in the store when it
    /// descends from the configured one, else the configured one (a new
    /// token put into the configuration replaces whatever was rotated).
    fn refresh_token(&self) -> Result<String, OAuthError> {
        let stored = self
            .store
            .oauth_refresh_token(&self.account)
            .map_err(OAuthError::Store)?;
        Ok(match stored {
            Some((token, origin)) if origin == fingerprint(&self.configured) => token,
            _ => self.configured.clone(),
        })
    }

    /// An access token valid for at least the margin: the one in hand, or
    /// a fresh one when `fresh` or when it is due for renewal. Returns the
    /// token and whether it was just fetched.
    pub fn access_token(&mut self, fresh: bool) -> Result<(AccessToken, bool), OAuthError> {
        if !fresh {
            if let Some(t) = &self.current {
                if Instant::now() < t.renew_at {
                    return Ok((t.clone(), false));
                }
            }
        }
        self.current = None;
        let t = self.fetch()?;
        self.current = Some(t.clone());
        Ok((t, true))
    }

    /// Fetches a new access token while the one in hand (if any) is still
    /// used: it is replaced only once the new one is here, so a session
    /// signed in with it goes on when the endpoint fails.
    pub fn renew(&mut self) -> Result<(), OAuthError> {
        let t = self.fetch()?;
        self.current = Some(t);
        Ok(())
    }

    /// One refresh-token grant; keeps a rotated refresh token.
    fn fetch(&mut self) -> Result<AccessToken, OAuthError> {
        let refresh_token = self.refresh_token()?;
        let g = self.client.refresh(&refresh_token)?;
        if let Some(rotated) = g.refresh_token.as_deref() {
            if !rotated.is_empty() && rotated != refresh_token {
                self.store
                    .set_oauth_refresh_token(&self.account, rotated, &fingerprint(&self.configured))
                    .map_err(OAuthError::Store)?;
                log::info!(
                    "{}: the provider rotated the refresh token; the new one is kept in the store",
                    self.account
                );
            }
        }
        let (renew_in, expires_in) = lifetime(g.expires_in);
        let now = Instant::now();
        let t = AccessToken {
            token: g.access_token,
            renew_at: now + renew_in,
            expires_at: now + expires_in,
        };
        log::debug!(
            "{}: got an access token valid for {expires_in:?}",
            self.account
        );
        Ok(t)
    }

    /// When the access token in hand is due for renewal.
    pub fn renew_at(&self) -> Option<Instant> {
        self.current.as_ref().map(|t| t.renew_at)
    }

    /// When the access token in hand expires.
    pub fn expires_at(&self) -> Option<Instant> {
        self.current.as_ref().map(|t| t.expires_at)
    }

    /// Forgets the access token in hand (the server refused it).
    pub fn discard(&mut self) {
        self.current = None;
    }
}

/// When a token of `expires_in` seconds is due for renewal, and when it
/// expires, from now: the lifetime (one hour when absent, at most a day)
/// less the margin, and not sooner than [`MIN_RENEWAL`].
fn lifetime(expires_in: Option<u64>) -> (Duration, Duration) {
    let life = expires_in
        .map_or(DEFAULT_LIFETIME, Duration::from_secs)
        .min(MAX_LIFETIME);
    (
        (life - EXPIRY_MARGIN.min(life / 2)).max(min_renewal()),
        life,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_lifetime_never_overflows_and_strings_are_read() {
        assert_eq!(lifetime(Some(u64::MAX)).1, MAX_LIFETIME);
        assert_eq!(lifetime(None).1, DEFAULT_LIFETIME);
        assert_eq!(
            lifetime(Some(100)),
            (Duration::from_secs(50), Duration::from_secs(100))
        );
        assert_eq!(lifetime(Some(20)), (MIN_RENEWAL, Duration::from_secs(20)));
        assert_eq!(lifetime(Some(0)).0, MIN_RENEWAL);
        let g = |v: &str| -> Option<u64> {
            serde_json::from_str::<Grant>(&format!(r#"{{"access_token":"a","expires_in":{v}}}"#))
                .unwrap()
                .expires_in
        };
        assert_eq!(g("18446744073709551615"), Some(u64::MAX));
        assert_eq!(g("1e300"), Some(u64::MAX));
        assert_eq!(g("\"3599\""), Some(3599));
        assert_eq!(g("-5"), None);
        assert_eq!(g("\"soon\""), None);
        assert_eq!(g("null"), None);
    }

    /// Found by an audit of the binary: a token endpoint (or a proxy) that
    /// quotes the request back put the refresh token and the client
    /// secret in `lastError`, the logs and the webhooks.
    #[test]
    fn a_refusal_that_echoes_the_request_is_quoted_without_its_secrets() {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/token",
            server.server_addr().to_ip().unwrap().port()
        );
        let t = std::thread::spawn(move || {
            for status in [400, 503] {
                let mut req = server.recv().unwrap();
                let mut form = String::new();
                req.as_reader().read_to_string(&mut form).unwrap();
                // The body as sent, and as JSON escapes it once decoded.
                let decoded: String = url::form_urlencoded::parse(form.as_bytes())
                    .map(|(k, v)| format!("{k}={v} "))
                    .collect();
                let body = serde_json::json!({
                    "error": "invalid_grant",
                    "error_description": format!("you sent {form} i.e. {decoded}"),
                })
                .to_string()
                .replace('/', "\\/");
                let _ =
                    req.respond(tiny_http::Response::from_string(body).with_status_code(status));
            }
        });
        let c = Client::new(&OAuth2Config {
            token_url: Some(url),
            client_id: "my-client-id".into(),
            client_secret: Some("CLIENT-SECRET+4242/x".into()),
            refresh_token: None,
            ..serde_json::from_str::<OAuth2Config>(r#"{"client_id":"x"}"#).unwrap()
        })
        .unwrap();
        for _ in 0..2 {
            let e = c
                .refresh("1//0REFRESH-token/7777+x")
                .unwrap_err()
                .to_string();
            for secret in ["REFRESH", "7777", "CLIENT-SECRET", "4242"] {
                assert!(!e.contains(secret), "{secret} in {e}");
            }
            assert!(e.contains("my-client-id") && e.contains("********"), "{e}");
        }
        t.join().unwrap();
    }

    /// Found by a regression audit: an endpoint's `\n` in its description
    /// forged a log line, its ESC coloured the terminal, and 3,000
    /// characters went into `lastError`.
    #[test]
    fn a_refusal_is_quoted_escaped_and_cut() {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/token",
            server.server_addr().to_ip().unwrap().port()
        );
        let t = std::thread::spawn(move || {
            let req = server.recv().unwrap();
            let body = serde_json::json!({
                "error": "invalid_grant\u{1b}[31mRED",
                "error_description": format!("one\n2026-11-30T00:00:00Z [ERROR] FORGED\u{7}{}", "D".repeat(3000)),
            })
            .to_string();
            let _ = req.respond(tiny_http::Response::from_string(body).with_status_code(400));
        });
        let c = Client::new(&OAuth2Config {
            token_url: Some(url),
            client_id: "id".into(),
            refresh_token: None,
            ..serde_json::from_str::<OAuth2Config>(r#"{"client_id":"x"}"#).unwrap()
        })
        .unwrap();
        let e = c.refresh("refresh").unwrap_err().to_string();
        t.join().unwrap();
        assert!(!e.chars().any(|c| c.is_control()), "{e:.200}");
        assert!(
            e.contains("invalid_grant\\u{1b}[31mRED: one\\n2026"),
            "{e:.200}"
        );
        assert!(e.len() < 1200, "{}", e.len());
    }

    #[test]
    fn fingerprint_is_hex_sha256() {
        assert_eq!(
            fingerprint("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn provider_error_shows_error_and_description() {
        let e = OAuthError::Provider {
            status: 400,
            error: "invalid_grant".into(),
            description: Some("Token has been expired or revoked.".into()),
        };
        assert_eq!(
            e.to_string(),
            "oauth2 endpoint refused (HTTP 400): invalid_grant: Token has been expired or revoked. \
             (the refresh token is expired or revoked: get a new one with `mailproc oauth \
             ACCOUNT`)"
        );
        assert!(!e.is_transient());
    }
}
