//! Who may call what: bearer tokens, API keys, sessions, permissions.
//!
//! This is the one place a permission is checked. The rules (DESIGN §5):
//! the server `auth_token` grants everything; an API key grants its listed
//! permissions, where `read:*`, `write:*` and `*` are wildcards and `write:X`
//! implies `read:X`; a live session cookie grants everything; with neither a
//! token nor keys configured the API is open. Secrets are compared in
//! constant time, over SHA-256 digests so that lengths do not leak either.
//!
//! Passwords (Argon2, one verification at a time) are `password.rs`;
//! the lockout of repeated failed logins, and the device cookies that
//! let a known browser past it, `lockout.rs`.

mod lockout;
mod password;

pub use lockout::{device_cookie, known_device, lockout_retry_after, Attempt, LoginLimiter};
pub use password::{hash_password, verify_login, verify_password, Busy};

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Config;

pub const SESSION_COOKIE: &str = "mailproc_session";
/// Names a browser a user has signed in from before (see
/// [`device_cookie`]): its logins are not held by the username's lockout.
pub const DEVICE_COOKIE: &str = "mailproc_device";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// No token or key is configured: development mode.
    Open,
    ServerToken,
    ApiKey {
        name: String,
        permissions: Vec<String>,
    },
    Session {
        user: String,
    },
}

impl Principal {
    pub fn allows(&self, needed: &str) -> bool {
        match self {
            Principal::ApiKey { permissions, .. } => grants(permissions, needed),
            _ => true,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Principal::Open => "open".into(),
            Principal::ServerToken => "server token".into(),
            Principal::ApiKey { name, .. } => format!("key {name}"),
            Principal::Session { user } => format!("session of {user}"),
        }
    }
}

/// Whether a set of granted permissions covers `needed` (`read:stats` etc.).
pub fn grants(granted: &[String], needed: &str) -> bool {
    let (n_op, n_res) = needed.split_once(':').unwrap_or((needed, ""));
    granted.iter().any(|g| {
        if g == "*" || g == needed {
            return true;
        }
        let Some((g_op, g_res)) = g.split_once(':') else {
            return false;
        };
        let op_ok = g_op == n_op || (g_op == "write" && n_op == "read");
        op_ok && (g_res == "*" || g_res == n_res)
    })
}

fn digest(s: &[u8]) -> [u8; 32] {
    Sha256::digest(s).into()
}

/// Constant-time equality of two secrets of any length.
pub fn secret_eq(a: &str, b: &str) -> bool {
    digest(a.as_bytes()).ct_eq(&digest(b.as_bytes())).into()
}

#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    /// 401: the message says what was wrong without echoing the credential.
    Unauthorized(&'static str),
}

/// Resolves the `Authorization` header against the configuration.
/// `Ok(None)` means no header was sent (a session may still apply).
pub fn bearer(config: &Config, header: Option<&str>) -> Result<Option<Principal>, AuthError> {
    let Some(value) = header else {
        return Ok(None);
    };
    // The scheme is case-insensitive (RFC 9110 §11.1), the token follows
    // after one or more spaces.
    let token = match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("Bearer") => token.trim(),
        _ => {
            return Err(AuthError::Unauthorized(
                "the Authorization header must read 'Bearer <token>'",
            ))
        }
    };
    // Every candidate is compared, so timing does not reveal which matched.
    let mut found = None;
    if let Some(t) = &config.server.auth_token {
        if secret_eq(t, token) {
            found = Some(Principal::ServerToken);
        }
    }
    for k in &config.dashboard.api_keys {
        if secret_eq(&k.key, token) && k.key.chars().count() >= 16 && found.is_none() {
            found = Some(Principal::ApiKey {
                name: k.name.clone(),
                permissions: k.permissions.clone(),
            });
        }
    }
    found
        .map(Some)
        .ok_or(AuthError::Unauthorized("invalid bearer token"))
}

/// Whether the API needs credentials at all.
pub fn api_is_open(config: &Config) -> bool {
    config.api_is_open()
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).expect("the OS random source is available");
    b
}

/// A fresh 256-bit token, URL-safe base64.
pub fn new_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes::<32>())
}

/// What the store keeps of a session token: its HMAC under the session
/// secret, so a copy of the database does not hold usable sessions.
pub fn token_mac(secret: &[u8], token: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(token.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `Set-Cookie` value of a session (DESIGN §5); an empty `value` with
/// `max_age` 0 deletes it.
pub fn session_cookie(value: &str, max_age: u64, secure: bool) -> String {
    format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// Reads one cookie from a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(list: &[&str], needed: &str) -> bool {
        grants(
            &list.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            needed,
        )
    }

    #[test]
    fn permission_rules() {
        assert!(g(&["read:stats"], "read:stats"));
        assert!(!g(&["read:stats"], "read:activity"));
        assert!(!g(&["read:stats"], "write:stats"));
        assert!(g(&["read:*"], "read:logs"));
        assert!(!g(&["read:*"], "write:accounts"));
        assert!(g(&["write:*"], "write:accounts"));
        assert!(g(&["write:*"], "read:export"), "write:* implies every read");
        assert!(
            g(&["write:accounts"], "read:accounts"),
            "write:X implies read:X"
        );
        assert!(!g(&["write:accounts"], "read:stats"));
        assert!(g(&["*"], "write:logs"));
        assert!(!g(&[], "read:stats"));
    }

    #[test]
    fn bearer_forms() {
        let mut c = Config::default();
        c.server.auth_token = Some("server-token-0123456789".into());
        c.dashboard.api_keys.push(crate::config::ApiKeyConfig {
            name: "k".into(),
            key: "key-0123456789abcdef".into(),
            permissions: vec!["read:stats".into()],
        });
        assert_eq!(bearer(&c, None), Ok(None));
        assert_eq!(
            bearer(&c, Some("Bearer server-token-0123456789")),
            Ok(Some(Principal::ServerToken))
        );
        assert!(matches!(
            bearer(&c, Some("Bearer key-0123456789abcdef")),
            Ok(Some(Principal::ApiKey { .. }))
        ));
        // The scheme in any case (RFC 9110 §11.1), after any spaces.
        for form in [
            "bearer server-token-0123456789",
            "BEARER  server-token-0123456789",
        ] {
            assert_eq!(
                bearer(&c, Some(form)),
                Ok(Some(Principal::ServerToken)),
                "{form}"
            );
        }
        assert!(bearer(&c, Some("key-0123456789abcdef")).is_err());
        assert!(bearer(&c, Some("Bearerkey-0123456789abcdef")).is_err());
        assert!(bearer(&c, Some("Basic key-0123456789abcdef")).is_err());
        assert!(bearer(&c, Some("Bearer nope")).is_err());
        assert!(bearer(&c, Some("Bearer ")).is_err());
    }

    #[test]
    fn tokens_and_macs() {
        assert_ne!(token_mac(b"a", "t"), token_mac(b"b", "t"));
        assert_eq!(new_token().len(), 43);
    }

    #[test]
    fn cookies() {
        assert_eq!(
            cookie("a=1; mailproc_session=xyz; b=2", SESSION_COOKIE),
            Some("xyz")
        );
        assert_eq!(cookie("a=1", SESSION_COOKIE), None);
    }
}
