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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use base64::Engine;
use hmac::{Hmac, Mac};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Config;

pub const SESSION_COOKIE: &str = "mailproc_session";
/// Names a browser a user has signed in from before (see
/// [`device_cookie`]): its logins are not held by the username's lockout.
pub const DEVICE_COOKIE: &str = "mailproc_device";
/// How long a device cookie is kept by the browser.
const DEVICE_TTL: Duration = Duration::from_secs(365 * 86_400);

/// Failed logins allowed per client address within [`LOGIN_WINDOW`].
const LOGIN_FAILURES: usize = 10;
/// Failed logins allowed per username within [`LOGIN_WINDOW`], from all
/// addresses together: more than one address's share, so a typing user on
/// two devices is not locked out first, few enough that rotating addresses
/// (or `X-Forwarded-For` through a trusted proxy) buys nothing.
const USER_FAILURES: usize = 20;
const LOGIN_WINDOW: Duration = Duration::from_secs(15 * 60);
/// The `Retry-After` of a login refused as one too many (429), in
/// seconds: the whole [`LOGIN_WINDOW`], after which every failure counted
/// has expired.
pub fn lockout_retry_after() -> String {
    LOGIN_WINDOW.as_secs().to_string()
}
/// Clients (addresses or usernames) remembered at once; past it, entries
/// whose failures have all expired are dropped.
const LIMITER_ENTRIES: usize = 10_000;
/// Longest username kept as a limiter key (valid names are at most 64
/// characters); longer ones count under their first bytes.
const USER_KEY_BYTES: usize = 256;

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
    config.server.auth_token.is_none() && config.dashboard.api_keys.is_empty()
}

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::encode_b64(&random_bytes::<16>()).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// The one Argon2 memory block every verification uses, in turn.
///
/// Each verification needs `m` KiB (19 MiB for the default parameters).
/// Allocated per call on whichever HTTP worker ran it, glibc kept each
/// thread's block in that thread's arena: 36 wrong logins took the process
/// from 11 MB to 615 MB. One block, allocated once and reused under a lock,
/// bounds that at one block whatever the number of logins.
static ARGON2_MEMORY: Mutex<Vec<Block>> = Mutex::new(Vec::new());

/// Largest Argon2 memory a stored hash may ask for (256 MiB), so a hash
/// written by hand into the database cannot make the process allocate
/// without bound.
const MAX_ARGON2_KIB: u32 = 256 << 10;

/// How long a verification waits for the block before giving up (and
/// answering [`Busy`]): a flood of logins must not hold the HTTP workers
/// for longer.
const ARGON2_WAIT: Duration = Duration::from_secs(10);

/// Verifications in progress or waiting for the block, and how many may
/// be: one more is [`Busy`] at once. Each holds an HTTP worker while it
/// waits, so a crowd of logins from many addresses (each under its own
/// limit) held every worker and `/health` waited seconds behind them; the
/// HTTP server keeps one worker out of it ([`set_verifier_queue`]).
static VERIFIER_QUEUE: Gate = Gate::new(3);

/// Lets all but one of `workers` HTTP workers (at least one) verify or
/// wait to verify a password at once.
pub fn set_verifier_queue(workers: usize) {
    VERIFIER_QUEUE
        .limit
        .store(workers.saturating_sub(1).max(1), Ordering::Relaxed);
}

/// A bounded count of holders: [`Gate::enter`] is `None` when `limit` hold
/// it already.
struct Gate {
    holders: AtomicUsize,
    limit: AtomicUsize,
}

/// A place in a [`Gate`], given back when dropped.
struct Held<'a>(&'a Gate);

impl Gate {
    const fn new(limit: usize) -> Gate {
        Gate {
            holders: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit),
        }
    }

    fn enter(&self) -> Option<Held<'_>> {
        let limit = self.limit.load(Ordering::Relaxed);
        self.holders
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Held(self))
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.holders.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A password that could not be checked: other logins held the verifier
/// for [`ARGON2_WAIT`], or as many as may wait for it were waiting
/// already. Neither right nor wrong: the client is told to try again
/// (503), not that its password is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// Whether `password` is the one `hash` was made from; a hash that cannot
/// be read (written by hand, another scheme) never matches.
pub fn verify_password(password: &str, hash: &str) -> Result<bool, Busy> {
    verify_waiting(password, hash, ARGON2_WAIT)
}

fn verify_waiting(password: &str, hash: &str, wait: Duration) -> Result<bool, Busy> {
    match verify_in_shared_memory(password, hash, wait) {
        Ok(ok) => Ok(ok),
        Err(Unchecked::Busy) => Err(Busy),
        Err(Unchecked::Hash(e)) => {
            log::warn!("auth: password not verified: {e}");
            Ok(false)
        }
    }
}

/// Why a password was not checked.
enum Unchecked {
    Busy,
    /// The stored hash cannot be used.
    Hash(String),
}

impl From<String> for Unchecked {
    fn from(e: String) -> Unchecked {
        Unchecked::Hash(e)
    }
}

fn verify_in_shared_memory(password: &str, hash: &str, wait: Duration) -> Result<bool, Unchecked> {
    let parsed = PasswordHash::new(hash).map_err(|e| format!("stored hash: {e}"))?;
    let algorithm = Algorithm::try_from(parsed.algorithm).map_err(|e| e.to_string())?;
    let version = parsed
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let params = Params::try_from(&parsed).map_err(|e| e.to_string())?;
    if params.m_cost() > MAX_ARGON2_KIB {
        return Err(Unchecked::Hash(format!(
            "stored hash asks for {} KiB",
            params.m_cost()
        )));
    }
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(Unchecked::Hash(
            "stored hash lacks its salt or output".into(),
        ));
    };
    let mut salt_bytes = [0u8; 64];
    let salt = salt
        .decode_b64(&mut salt_bytes)
        .map_err(|e| format!("stored salt: {e}"))?;
    let mut out = vec![0u8; expected.len()];
    let argon2 = Argon2::new(algorithm, version, params.clone());
    let _place = VERIFIER_QUEUE.enter().ok_or(Unchecked::Busy)?;
    let mut memory = ARGON2_MEMORY.try_lock_for(wait).ok_or(Unchecked::Busy)?;
    if memory.len() < params.block_count() {
        memory.resize(params.block_count(), Block::default());
    }
    argon2
        .hash_password_into_with_memory(
            password.as_bytes(),
            salt,
            &mut out,
            &mut memory[..params.block_count()],
        )
        .map_err(|e| Unchecked::Hash(e.to_string()))?;
    drop(memory);
    Ok(out.ct_eq(expected.as_bytes()).into())
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
/// the time taken does not reveal which user names exist (nor does
/// [`Busy`]: it comes the same way for both).
pub fn verify_login(password: &str, hash: Option<&str>) -> Result<bool, Busy> {
    match hash {
        Some(h) => verify_password(password, h),
        None => verify_password(password, DUMMY_HASH).map(|_| false),
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

/// Counts failed logins per client (an IPv4 address, or an IPv6 /64: one
/// subscriber usually holds a whole /64 and can pick any address in it) and
/// per username.
///
/// An attempt is counted *before* its password is checked
/// ([`LoginLimiter::attempt`]) and forgiven only when it succeeds, so a
/// burst of concurrent guesses cannot all pass the check while the first
/// ones are still being verified.
#[derive(Default)]
pub struct LoginLimiter {
    state: Mutex<LimiterState>,
}

#[derive(Default)]
struct LimiterState {
    by_ip: HashMap<IpAddr, VecDeque<(Instant, u64)>>,
    by_user: HashMap<String, VecDeque<(Instant, u64)>>,
    /// Failures of logins from a known device (by its cookie's nonce):
    /// counted there instead of under the username.
    by_device: HashMap<String, VecDeque<(Instant, u64)>>,
    next_id: u64,
}

/// A login attempt counted by [`LoginLimiter::attempt`]; give it to
/// [`LoginLimiter::succeed`] when the password was right.
#[derive(Debug)]
pub struct Attempt {
    ip: IpAddr,
    /// Where it counts besides its address: the username, or the known
    /// device it came from.
    key: Option<Counted>,
    id: u64,
}

#[derive(Debug)]
enum Counted {
    User(String),
    Device(String),
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

fn user_key(user: &str) -> String {
    let mut end = user.len().min(USER_KEY_BYTES);
    while !user.is_char_boundary(end) {
        end -= 1;
    }
    user[..end].to_string()
}

/// Failures of one client still inside the window (older ones dropped).
fn recent<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, VecDeque<(Instant, u64)>>,
    key: &K,
    now: Instant,
) -> usize {
    let Some(q) = map.get_mut(key) else {
        return 0;
    };
    while q
        .front()
        .is_some_and(|(t, _)| now.duration_since(*t) > LOGIN_WINDOW)
    {
        q.pop_front();
    }
    q.len()
}

/// Bounds a map: an attacker rotating addresses or names must not grow it
/// for ever.
fn prune<K>(map: &mut HashMap<K, VecDeque<(Instant, u64)>>, now: Instant) {
    if map.len() > LIMITER_ENTRIES {
        map.retain(|_, q| {
            q.back()
                .is_some_and(|(t, _)| now.duration_since(*t) <= LOGIN_WINDOW)
        });
    }
}

impl LoginLimiter {
    /// Whether the address is locked out (checked before a form is read).
    pub fn blocked(&self, ip: IpAddr) -> bool {
        let mut s = self.state.lock();
        recent(&mut s.by_ip, &client_key(ip), Instant::now()) >= LOGIN_FAILURES
    }

    /// Counts an attempt from `ip` for `user` (`None` where no username is
    /// given, as for the setup code) before it is checked; `None` when the
    /// address or the username is locked out (answer 429). `device` is the
    /// nonce of a valid [`device_cookie`] for `user` the request carried:
    /// such an attempt counts against that device, not the username, so
    /// strangers guessing a username cannot lock its owner out of the
    /// browsers they signed in from (OWASP's device cookies).
    pub fn attempt(&self, ip: IpAddr, user: Option<&str>, device: Option<&str>) -> Option<Attempt> {
        let now = Instant::now();
        let ip = client_key(ip);
        let key = match (user, device) {
            (Some(_), Some(d)) => Some(Counted::Device(d.to_string())),
            (Some(u), None) => Some(Counted::User(user_key(u))),
            (None, _) => None,
        };
        let mut guard = self.state.lock();
        let s = &mut *guard;
        if recent(&mut s.by_ip, &ip, now) >= LOGIN_FAILURES {
            return None;
        }
        match &key {
            Some(Counted::User(u)) if recent(&mut s.by_user, u, now) >= USER_FAILURES => {
                return None
            }
            Some(Counted::Device(d)) if recent(&mut s.by_device, d, now) >= LOGIN_FAILURES => {
                return None
            }
            _ => {}
        }
        prune(&mut s.by_ip, now);
        prune(&mut s.by_user, now);
        prune(&mut s.by_device, now);
        s.next_id += 1;
        let id = s.next_id;
        s.by_ip.entry(ip).or_default().push_back((now, id));
        match &key {
            Some(Counted::User(u)) => s.by_user.entry(u.clone()).or_default().push_back((now, id)),
            Some(Counted::Device(d)) => s
                .by_device
                .entry(d.clone())
                .or_default()
                .push_back((now, id)),
            None => {}
        }
        Some(Attempt { ip, key, id })
    }

    /// Takes `attempt` out of its username's or device's count.
    fn forget(s: &mut LimiterState, attempt: &Attempt) {
        let q = match &attempt.key {
            Some(Counted::User(u)) => s.by_user.get_mut(u),
            Some(Counted::Device(d)) => s.by_device.get_mut(d),
            None => None,
        };
        if let Some(q) = q {
            q.retain(|(_, id)| *id != attempt.id);
        }
    }

    /// The attempt could not be checked ([`Busy`]): it still counts for
    /// its address (a flood stays a flood), not for the username, so
    /// logins that were never checked cannot lock a user out.
    pub fn unchecked(&self, attempt: Attempt) {
        Self::forget(&mut self.state.lock(), &attempt);
    }

    /// The attempt was right: it does not count, nor do the address's
    /// earlier failures. The username's failures from elsewhere stay.
    pub fn succeed(&self, attempt: Attempt) {
        let mut s = self.state.lock();
        s.by_ip.remove(&attempt.ip);
        Self::forget(&mut s, &attempt);
    }
}

/// The `Set-Cookie` value naming this browser as one `user` signed in
/// from: a random nonce and its HMAC with the user's name under the
/// session secret (so it is worth nothing for another user, or once the
/// secret changes). It opens nothing by itself; it only lets this
/// browser's logins for `user` past the username's lockout.
pub fn device_cookie(secret: &[u8], user: &str, hash: &str, secure: bool) -> String {
    let nonce = new_token();
    let mac = device_mac(secret, user, hash, &nonce);
    format!(
        "{DEVICE_COOKIE}={nonce}.{mac}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{}",
        DEVICE_TTL.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// The nonce of a `Cookie` header's device cookie when it is valid for
/// `user`.
pub fn known_device<'a>(
    secret: &[u8],
    cookies: Option<&'a str>,
    user: &str,
    hash: &str,
) -> Option<&'a str> {
    let (nonce, mac) = cookie(cookies?, DEVICE_COOKIE)?.split_once('.')?;
    let want = device_mac(secret, user, hash, nonce);
    (!nonce.is_empty() && bool::from(want.as_bytes().ct_eq(mac.as_bytes()))).then_some(nonce)
}

/// Bound to the user's password hash too: a new password (`set-password`,
/// as after a leak) ends every device cookie issued before it, as it ends
/// the sessions (found by an audit: old cookies each kept ten guesses at
/// the new password).
fn device_mac(secret: &[u8], user: &str, hash: &str, nonce: &str) -> String {
    token_mac(secret, &format!("device:{}:{hash}:{nonce}", user_key(user)))
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
    fn the_verifier_queue_holds_at_most_its_limit() {
        let gate = Gate::new(2);
        let a = gate.enter().expect("first");
        let b = gate.enter().expect("second");
        assert!(gate.enter().is_none(), "a third is busy at once");
        drop(a);
        let c = gate.enter().expect("a place came free");
        assert!(gate.enter().is_none());
        drop((b, c));
        assert_eq!(gate.holders.load(Ordering::Relaxed), 0);
        gate.limit.store(1, Ordering::Relaxed);
        let _d = gate.enter().expect("one");
        assert!(gate.enter().is_none());
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
    fn passwords_and_macs() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert_eq!(verify_password("correct horse", &h), Ok(true));
        assert_eq!(verify_password("wrong", &h), Ok(false));
        assert_ne!(token_mac(b"a", "t"), token_mac(b"b", "t"));
        assert_eq!(new_token().len(), 43);
    }

    #[test]
    fn limiter_blocks_after_ten_failures() {
        let l = LoginLimiter::default();
        let ip: IpAddr = "127.0.0.9".parse().unwrap();
        for _ in 0..9 {
            assert!(l.attempt(ip, Some("admin"), None).is_some());
        }
        assert!(!l.blocked(ip));
        let tenth = l.attempt(ip, Some("admin"), None).unwrap();
        assert!(l.blocked(ip), "counted before it is checked");
        assert!(l.attempt(ip, Some("admin"), None).is_none());
        l.succeed(tenth);
        assert!(!l.blocked(ip));
    }

    #[test]
    fn limiter_counts_per_username_across_addresses() {
        let l = LoginLimiter::default();
        for i in 0..USER_FAILURES {
            let ip = IpAddr::from([198, 51, 100, i as u8]);
            assert!(l.attempt(ip, Some("admin"), None).is_some(), "attempt {i}");
        }
        let fresh = IpAddr::from([203, 0, 113, 1]);
        assert!(l.attempt(fresh, Some("admin"), None).is_none());
        assert!(l.attempt(fresh, Some("other"), None).is_some());
        // A right password forgives its own attempt only.
        let l = LoginLimiter::default();
        let a = l.attempt(fresh, Some("admin"), None).unwrap();
        l.attempt(IpAddr::from([198, 51, 100, 1]), Some("admin"), None);
        l.succeed(a);
        assert_eq!(l.state.lock().by_user["admin"].len(), 1);
    }

    /// Found by an audit: twenty wrong passwords for `admin` from anywhere
    /// locked the real admin out for 15 minutes, renewable for ever. A
    /// browser admin signed in from before (its device cookie) is not held
    /// by the username's count, and a stolen cookie buys only ten guesses.
    #[test]
    fn a_known_device_is_not_locked_out_by_strangers_guessing() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let set = device_cookie(secret, "admin", "hash1", true);
        let value = set.split(';').next().unwrap();
        assert!(value.starts_with("mailproc_device="), "{set}");
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Secure")
        );
        let header = format!("theme=dark; {value}");
        let nonce = known_device(secret, Some(&header), "admin", "hash1").expect("valid for admin");
        assert_eq!(
            known_device(secret, Some(&header), "admin", "hash2"),
            None,
            "a new password ends it"
        );
        assert_eq!(
            known_device(secret, Some(&header), "alice", "hash1"),
            None,
            "bound to its user"
        );
        assert_eq!(
            known_device(b"another secret", Some(&header), "admin", "hash1"),
            None
        );
        let forged = header.replace('.', ".0");
        assert_eq!(known_device(secret, Some(&forged), "admin", "hash1"), None);
        assert_eq!(known_device(secret, None, "admin", "hash1"), None);

        let l = LoginLimiter::default();
        for i in 0..USER_FAILURES {
            let ip = IpAddr::from([198, 51, 100, i as u8]);
            assert!(l.attempt(ip, Some("admin"), None).is_some(), "attempt {i}");
        }
        let home = IpAddr::from([203, 0, 113, 7]);
        assert!(
            l.attempt(home, Some("admin"), None).is_none(),
            "locked for strangers"
        );
        let a = l
            .attempt(home, Some("admin"), Some(nonce))
            .expect("the known device gets in");
        l.succeed(a);
        // Its own failures count against it alone, ten at most.
        for i in 0..LOGIN_FAILURES {
            let ip = IpAddr::from([192, 0, 2, i as u8]);
            assert!(l.attempt(ip, Some("admin"), Some(nonce)).is_some(), "{i}");
        }
        assert!(l.attempt(home, Some("admin"), Some(nonce)).is_none());
        assert_eq!(l.state.lock().by_user["admin"].len(), USER_FAILURES);
    }

    #[test]
    fn limiter_counts_an_ipv6_slash_64_as_one_client() {
        let l = LoginLimiter::default();
        for i in 0..10u16 {
            l.attempt(IpAddr::from([0x2001, 0xdb8, 0, 1, i, i, i, i]), None, None);
        }
        assert!(l.blocked("2001:db8:0:1:ffff::1".parse().unwrap()));
        assert!(!l.blocked("2001:db8:0:2::1".parse().unwrap()));
    }

    /// A hash of "pw" with small parameters (1 MiB, one pass, `lanes`).
    fn small_hash(lanes: u32) -> String {
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(1024, 1, lanes, Some(24)).unwrap(),
        )
        .hash_password(b"pw", &salt)
        .unwrap()
        .to_string()
    }

    #[test]
    fn verification_reads_the_parameters_of_the_stored_hash() {
        // A hash made with other parameters than the default still verifies.
        let small = small_hash(2);
        assert_eq!(verify_password("pw", &small), Ok(true));
        assert_eq!(verify_password("px", &small), Ok(false));
        assert_eq!(
            verify_password(
                "pw",
                "$argon2id$v=19$m=999999999,t=1,p=1$c2FsdHNhbHQ$aGFzaA"
            ),
            Ok(false)
        );
        assert_eq!(verify_password("pw", "not a hash"), Ok(false));
    }

    #[test]
    fn a_password_not_checked_in_time_is_busy_not_wrong() {
        let small = small_hash(1);
        // Another login holds the one verifier for longer than the wait.
        let held = ARGON2_MEMORY.lock();
        let wait = Duration::from_millis(50);
        assert_eq!(verify_waiting("pw", &small, wait), Err(Busy));
        assert_eq!(verify_waiting("px", &small, wait), Err(Busy));
        drop(held);
        assert_eq!(verify_waiting("pw", &small, wait), Ok(true));
    }

    #[test]
    fn an_unchecked_attempt_counts_for_its_address_not_its_user() {
        let l = LoginLimiter::default();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        for i in 0..USER_FAILURES {
            let from: IpAddr = format!("198.51.100.{}", i % 200).parse().unwrap();
            let a = l.attempt(from, Some("alice"), None).unwrap();
            l.unchecked(a);
        }
        // None of them locked alice out...
        assert!(l.attempt(ip, Some("alice"), None).is_some());
        // ...but each still counted for the address it came from.
        let flood: IpAddr = "203.0.113.9".parse().unwrap();
        for _ in 0..LOGIN_FAILURES {
            let a = l.attempt(flood, Some("bob"), None).unwrap();
            l.unchecked(a);
        }
        assert!(l.blocked(flood));
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
