//! The device authorization grant (RFC 8628) behind `mailproc oauth
//! ACCOUNT`: ask for a user code, let the person approve it in any
//! browser, poll the token endpoint until they did. No local web server,
//! no browser automation.

use std::io::Write;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Client, Grant, OAuthError};
use crate::config::{AccountConfig, ImapAuth};

/// RFC 8628 §3.2: polling interval when the answer names none.
const DEFAULT_INTERVAL: u64 = 5;
/// RFC 8628 §3.5: `slow_down` adds five seconds to the interval.
const SLOW_DOWN: Duration = Duration::from_secs(5);

/// The device authorization answer (RFC 8628 §3.2).
#[derive(Debug, Deserialize)]
pub struct DeviceCode {
    pub device_code: String,
    pub user_code: String,
    /// Google names it `verification_url`.
    #[serde(alias = "verification_url")]
    pub verification_uri: String,
    #[serde(default)]
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    #[serde(default)]
    pub interval: Option<u64>,
    /// Microsoft adds a ready-made sentence for the user.
    #[serde(default)]
    pub message: Option<String>,
}

impl Client {
    /// Asks for a device and user code (RFC 8628 §3.1).
    pub fn device_code(&self, device_url: &str) -> Result<DeviceCode, OAuthError> {
        let mut form = Vec::new();
        if let Some(s) = &self.scope {
            form.push(("scope", s.as_str()));
        }
        self.post(device_url, &self.with_client(form))
    }

    /// Polls the token endpoint until the user approved, refused, or the
    /// code expired (RFC 8628 §3.4, §3.5). `wait` sleeps between polls
    /// (tests may pass a shorter sleep; the interval is the server's).
    pub fn poll_device(
        &self,
        code: &DeviceCode,
        mut wait: impl FnMut(Duration),
    ) -> Result<Grant, OAuthError> {
        let mut interval = Duration::from_secs(code.interval.unwrap_or(DEFAULT_INTERVAL).max(1));
        let deadline = Instant::now() + Duration::from_secs(code.expires_in);
        loop {
            wait(interval);
            let form = self.with_client(vec![
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ("device_code", &code.device_code),
            ]);
            match self.post::<Grant>(&self.token_url, &form) {
                Ok(g) => return Ok(g),
                Err(OAuthError::Provider { error, .. }) if error == "authorization_pending" => {}
                Err(OAuthError::Provider { error, .. }) if error == "slow_down" => {
                    interval += SLOW_DOWN;
                }
                // The endpoint busy or unreachable for a moment: the code
                // stays valid, so keep polling (later, when it asked so).
                Err(e) if e.is_transient() => {
                    log::debug!("device flow: {e}; polling again");
                    if let Some(d) = e.retry_after() {
                        wait(d);
                    }
                }
                Err(e) => return Err(e),
            }
            if Instant::now() >= deadline {
                return Err(OAuthError::Provider {
                    status: 400,
                    error: "expired_token".into(),
                    description: Some(
                        "the user code expired before it was approved; run the command again"
                            .into(),
                    ),
                });
            }
        }
    }
}

/// `mailproc oauth ACCOUNT`: runs the device flow for `account` and
/// returns the refresh token. What the person must do, and the progress,
/// go to `say` (standard error); `var` names the environment variable the
/// configuration takes the token from, when it names one.
pub fn helper(
    account: &AccountConfig,
    var: Option<&str>,
    say: &mut dyn Write,
) -> Result<String, String> {
    let name = &account.name;
    let o = match (&account.imap.auth, &account.imap.oauth2) {
        (ImapAuth::Oauth2, Some(o)) => o,
        _ => return Err(format!("account {name:?} does not use imap.auth: oauth2")),
    };
    let device_url = o.device_authorization_url().ok_or_else(|| {
        format!(
            "accounts[{name}].imap.oauth2.device_authorization_url: required unless a preset is set"
        )
    })?;
    let client = Client::new(o).map_err(|e| e.to_string())?;
    let code = client.device_code(device_url).map_err(|e| e.to_string())?;
    let io = |e: std::io::Error| e.to_string();
    writeln!(say, "To let mailproc read the mailbox of account {name:?}:").map_err(io)?;
    writeln!(say, "  1. open {}", code.verification_uri).map_err(io)?;
    writeln!(say, "  2. enter the code {}", code.user_code).map_err(io)?;
    if let Some(u) = &code.verification_uri_complete {
        writeln!(say, "     (or open {u}, which carries the code)").map_err(io)?;
    }
    writeln!(
        say,
        "  3. sign in as {} and allow the access asked for",
        account.imap.username
    )
    .map_err(io)?;
    let minutes = code.expires_in.div_ceil(60);
    writeln!(
        say,
        "Waiting for the approval (the code is valid for {minutes} minute{})...",
        if minutes == 1 { "" } else { "s" }
    )
    .map_err(io)?;
    let grant = client
        .poll_device(&code, std::thread::sleep)
        .map_err(|e| e.to_string())?;
    let Some(token) = grant.refresh_token.filter(|t| !t.is_empty()) else {
        return Err(
            "the provider approved but issued no refresh token; for Microsoft the scope must include offline_access"
                .into(),
        );
    };
    writeln!(
        say,
        "Approved. The refresh token is printed on standard output."
    )
    .map_err(io)?;
    match var {
        Some(v) => writeln!(
            say,
            "Put it into the service's environment file as {v}=<the token>, then restart mailproc."
        ),
        None => writeln!(
            say,
            "Put it into the service's environment file and refer to it as imap.oauth2.refresh_token: ${{NAME}}, then restart mailproc."
        ),
    }
    .map_err(io)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn google_spelling_of_the_verification_url_is_read() {
        let c: DeviceCode = serde_json::from_str(
            r#"{"device_code":"d","user_code":"ABC-DEF","verification_url":"https://www.google.com/device","expires_in":1800,"interval":5}"#,
        )
        .unwrap();
        assert_eq!(c.verification_uri, "https://www.google.com/device");
        assert_eq!(c.interval, Some(5));
    }
}
