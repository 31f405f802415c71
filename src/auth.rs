//! Who may call what: bearer tokens, API keys, sessions, permissions.
//!
//! This is the one place a permission is checked. The rules (DESIGN §5):
//! the server `auth_token` grants everything; an API key grants its listed
//! permissions, where `read:*`, `write:*` and `*` are wildcards and `write:X`
//! implies `read:X`; a live session cookie grants everything; with neither a
//! token nor keys configured the API is open. Secrets are compared in
//! constant time, over SHA-256 digests so that lengths do not leak either.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::Engine;
use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Config;

pub const SESSION_COOKIE: &str = "mailproc_session";

/// Failed logins allowed per client address within [`LOGIN_WINDOW`].
const LOGIN_FAILURES: usize = 10;
const LOGIN_WINDOW: Duration = Duration::from_secs(15 * 60);

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
    let Some(token) = value.strip_prefix("Bearer ") else {
        return Err(AuthError::Unauthorized(
            "the Authorization header must read 'Bearer <token>'",
        ));
    };
    let token = token.trim();
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
    config.server.auth_token.is_none() && config.dashboard.api_keys.is_empty()
}

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
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

/// Checks a login: `hash` is the stored hash of the user, `None` when the
/// user is unknown. An unknown user is verified against a fixed hash too, so
/// the time taken does not reveal which user names exist.
pub fn verify_login(password: &str, hash: Option<&str>) -> bool {
    match hash {
        Some(h) => verify_password(password, h),
        None => {
            let _ = verify_password(password, DUMMY_HASH);
            false
        }
    }
}

/// An argon2id hash of a random string, for [`verify_login`].
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Jm5MdCjTL4ixAjpcB3VD3J3uhCSWsgyK7ryHRppCz/A";

/// The `Set-Cookie` value of a session (DESIGN §5); an empty `value` with
/// `max_age` 0 deletes it.
pub fn session_cookie(value: &str, max_age: u64, secure: bool) -> String {
    format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// Counts failed logins per client: an IPv4 address, or an IPv6 /64 (one
/// subscriber usually holds a whole /64 and can pick any address in it).
#[derive(Default)]
pub struct LoginLimiter {
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

/// The bucket a client address counts in.
fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let mut s = v6.segments();
            s[4..].fill(0);
            IpAddr::from(s)
        }
        v4 => v4,
    }
}

impl LoginLimiter {
    pub fn blocked(&self, ip: IpAddr) -> bool {
        let ip = client_key(ip);
        let mut f = self.failures.lock();
        let now = Instant::now();
        let Some(q) = f.get_mut(&ip) else {
            return false;
        };
        while q
            .front()
            .is_some_and(|t| now.duration_since(*t) > LOGIN_WINDOW)
        {
            q.pop_front();
        }
        q.len() >= LOGIN_FAILURES
    }

    pub fn fail(&self, ip: IpAddr) {
        let ip = client_key(ip);
        let mut f = self.failures.lock();
        // Bound the map: an attacker rotating addresses must not grow it forever.
        if f.len() > 10_000 {
            let now = Instant::now();
            f.retain(|_, q| {
                q.back()
                    .is_some_and(|t| now.duration_since(*t) <= LOGIN_WINDOW)
            });
        }
        f.entry(ip).or_default().push_back(Instant::now());
    }

    pub fn succeed(&self, ip: IpAddr) {
        self.failures.lock().remove(&client_key(ip));
    }
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
        assert!(bearer(&c, Some("key-0123456789abcdef")).is_err());
        assert!(bearer(&c, Some("Basic key-0123456789abcdef")).is_err());
        assert!(bearer(&c, Some("Bearer nope")).is_err());
        assert!(bearer(&c, Some("Bearer ")).is_err());
    }

    #[test]
    fn passwords_and_macs() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong", &h));
        assert_ne!(token_mac(b"a", "t"), token_mac(b"b", "t"));
        assert_eq!(new_token().len(), 43);
    }

    #[test]
    fn limiter_blocks_after_ten_failures() {
        let l = LoginLimiter::default();
        let ip: IpAddr = "127.0.0.9".parse().unwrap();
        for _ in 0..9 {
            l.fail(ip);
        }
        assert!(!l.blocked(ip));
        l.fail(ip);
        assert!(l.blocked(ip));
        l.succeed(ip);
        assert!(!l.blocked(ip));
    }

    #[test]
    fn limiter_counts_an_ipv6_slash_64_as_one_client() {
        let l = LoginLimiter::default();
        for i in 0..10u16 {
            l.fail(IpAddr::from([0x2001, 0xdb8, 0, 1, i, i, i, i]));
        }
        assert!(l.blocked("2001:db8:0:1:ffff::1".parse().unwrap()));
        assert!(!l.blocked("2001:db8:0:2::1".parse().unwrap()));
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
