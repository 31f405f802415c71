//! The device authorization grant (RFC 8628) behind `mailproc oauth
//! ACCOUNT`: ask for a user code, let the person approve it in any
//! browser, poll the token endpoint until they did. No local web server,
//! no browser automation.

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Client, Grant, OAuthError};

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
