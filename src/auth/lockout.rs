//! Failed logins counted per client address and per username, and the
//! device cookies that let a browser signed in from before past the
//! username's lockout.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use subtle::ConstantTimeEq;

use super::{cookie, new_token, token_mac, DEVICE_COOKIE};

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
/// How near another attempt of its address must be for a login not
/// checked (the verifier busy with others) to count for the address:
/// longer than a check may wait for the verifier (10 s).
const FLOOD_NEAR: Duration = Duration::from_secs(20);
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

    /// The attempt could not be checked because other logins held the
    /// verifier ([`Busy::Logins`](super::Busy)). It never counts for the
    /// username, so logins that were never checked cannot lock a user
    /// out. It counts for its address only when the address has another
    /// attempt of the last [`FLOOD_NEAR`] (a flood from it stays a flood):
    /// counted always, a flood of wrong logins from other addresses had
    /// the operator's right password refused ten times and their address
    /// locked out for 15 minutes (the regression audit).
    pub fn unchecked(&self, attempt: Attempt) {
        let now = Instant::now();
        let mut s = self.state.lock();
        if let Some(q) = s.by_ip.get_mut(&attempt.ip) {
            let flood = q
                .iter()
                .any(|(t, id)| *id != attempt.id && now.duration_since(*t) <= FLOOD_NEAR);
            if !flood {
                q.retain(|(_, id)| *id != attempt.id);
            }
        }
        Self::forget(&mut s, &attempt);
    }

    /// The attempt could not be checked because requests of other kinds
    /// held the places a wait may take ([`Busy::Others`](super::Busy)):
    /// it counts for nothing.
    pub fn not_checked_for_others(&self, attempt: Attempt) {
        let mut s = self.state.lock();
        if let Some(q) = s.by_ip.get_mut(&attempt.ip) {
            q.retain(|(_, id)| *id != attempt.id);
        }
        Self::forget(&mut s, &attempt);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // ...but a flood from one address (its logins in flight at once)
        // counts for it...
        let flood: IpAddr = "203.0.113.9".parse().unwrap();
        let burst: Vec<Attempt> = (0..LOGIN_FAILURES)
            .map(|_| l.attempt(flood, Some("bob"), None).unwrap())
            .collect();
        for a in burst {
            l.unchecked(a);
        }
        assert!(l.blocked(flood));
        // ...while one client's logins one after another, each turned away
        // because others' held the verifier, do not: the operator's right
        // password during someone else's flood (the regression audit).
        let operator: IpAddr = "192.0.2.99".parse().unwrap();
        for _ in 0..3 * LOGIN_FAILURES {
            let a = l.attempt(operator, Some("carol"), None).unwrap();
            l.unchecked(a);
        }
        assert!(!l.blocked(operator));
    }
}
