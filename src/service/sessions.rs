//! Sessions: signing in (the API's `POST /login` and the dashboard's login
//! form alike), the session a cookie names, signing out, the one-time code
//! that lets the first visitor create the first user, and configuration
//! drafts kept for an author whose session ended.
//!
//! The store keeps only an HMAC of each session token, keyed by the
//! session secret, so a copy of the database opens no session. Failed
//! logins count per client address and per user name in one
//! [`crate::auth::LoginLimiter`]; the count is taken before the (slow)
//! password check, so a burst cannot race past it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::Ctx;
use crate::auth;
use crate::logging::clean;
use crate::store::{Store, StoreError};
use crate::timestamp::now_ms;

/// Opens a session for `user`: stores the token's HMAC with its expiry and
/// returns the `Set-Cookie` value. The one place sessions begin (the API's
/// login, the dashboard's login and setup forms).
pub fn open(ctx: &Ctx, user: &str, secure: bool) -> Result<String, StoreError> {
    let ttl = ctx.config().config.dashboard.session_ttl.0;
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    let token = auth::new_token();
    let mac = auth::token_mac(&ctx.session_secret, &token);
    ctx.store
        .create_session(&mac, user, now_ms().saturating_add(ttl_ms))?;
    Ok(auth::session_cookie(&token, ttl.as_secs(), secure))
}

/// Why a login was refused.
#[derive(Debug)]
pub enum LoginError {
    /// Too many failed logins from this address or for this user: 429.
    TooMany,
    /// Wrong user name or password: 401.
    Wrong,
    /// The password could not be checked in time (other logins held the
    /// verifier): 503, try again.
    Busy,
    /// The user could not be read or the session stored: 500 (503 when
    /// the database cannot be written now).
    Store(StoreError),
}

/// The `Retry-After` (seconds) of a login answered [`LoginError::Busy`].
pub const LOGIN_RETRY: &str = "5";

/// Says in the log that a login from `ip` was refused unchecked (the
/// address or the name locked out), at most a line a second: a lockout
/// left the journal silent while the real user was turned away (an
/// audit). `via` as for [`login`].
pub fn refused_unchecked(ip: std::net::IpAddr, user: Option<&str>, via: &str) {
    static LINES: parking_lot::Mutex<crate::logging::LinesPerSecond> =
        parking_lot::const_mutex(crate::logging::LinesPerSecond::new());
    if let Some(held) = LINES.lock().admit(std::time::Instant::now()) {
        log::warn!(
            "login{} from {ip}{via} refused unchecked: too many failed logins from that address \
             or for that name (up to 15 minutes){}",
            user.map(|u| format!(" for \"{}\"", clean(u)))
                .unwrap_or_default(),
            match held {
                0 => String::new(),
                n => format!("; {n} more refused since the last line"),
            }
        );
    }
}

/// Checks `user` and `password` for the client of `req` and opens a
/// session: the `Set-Cookie` values (the session's, and the device
/// cookie that keeps this browser's later logins out of the username's
/// lockout, see [`auth::LoginLimiter::attempt`]). `via` says where, for
/// the log (`""` or `" (dashboard)"`).
pub fn login(
    ctx: &Ctx,
    req: &crate::http::Req,
    user: &str,
    password: &str,
    via: &str,
) -> Result<Vec<String>, LoginError> {
    let (ip, secure, cookies) = (req.client_ip, req.secure, req.header("Cookie"));
    let refused = || {
        refused_unchecked(ip, Some(user), via);
        LoginError::TooMany
    };
    if ctx.limiter.blocked(ip) {
        return Err(refused());
    }
    // Counted before the (slow) check, so a burst cannot race past it.
    // A store that cannot say is no wrong password (an audit found a
    // damaged users table answered 401 and counted toward the lockout).
    let hash = ctx.store.password_hash(user).map_err(LoginError::Store)?;
    let device = hash
        .as_deref()
        .and_then(|h| auth::known_device(&ctx.session_secret, cookies, user, h));
    let Some(attempt) = ctx.limiter.attempt(ip, Some(user), device) else {
        return Err(refused());
    };
    match auth::verify_login(password, hash.as_deref()) {
        Ok(true) => {}
        Ok(false) => {
            // At most a line a second, as every line an unauthenticated
            // client causes at will: the lockout holds one address (an
            // IPv6 /64) to 10 in 15 minutes, but a client with many (a
            // /48, a proxy's X-Forwarded-For) wrote one a request, 333 KB
            // a second, and turned the logs page over in 2 s (an audit).
            crate::logging::warn_paced!(
                "failed",
                "login failed for \"{}\" from {ip}{via}",
                clean(user)
            );
            return Err(LoginError::Wrong);
        }
        Err(busy) => {
            crate::logging::warn_paced!(
                "not checked",
                "login for \"{}\" from {ip}{via} not checked: the service was busy ({})",
                clean(user),
                match busy {
                    auth::Busy::Logins => "other logins being checked",
                    auth::Busy::Others =>
                        "requests waiting on accounts or reading the activity log hold the workers",
                }
            );
            // A flood of logins counts for its address; a login turned
            // away by other requests is no attempt at all (an operator's
            // right password, refused while a script read the activity
            // log, locked their address out for 15 minutes: the
            // regression audit, `server.workers: 2`).
            match busy {
                auth::Busy::Logins => ctx.limiter.unchecked(attempt),
                auth::Busy::Others => ctx.limiter.not_checked_for_others(attempt),
            }
            return Err(LoginError::Busy);
        }
    }
    ctx.limiter.succeed(attempt);
    let cookie = open(ctx, user, secure).map_err(LoginError::Store)?;
    log::info!("\"{}\" logged in from {ip}{via}", clean(user));
    Ok(vec![
        cookie,
        auth::device_cookie(
            &ctx.session_secret,
            user,
            hash.as_deref().unwrap_or_default(),
            secure,
        ),
    ])
}

/// The user of the session `token` names, if it is live.
pub fn user(ctx: &Ctx, token: &str) -> Option<String> {
    let mac = auth::token_mac(&ctx.session_secret, token);
    ctx.store.session_user(&mac).ok().flatten()
}

/// Whether `cookies` carry a device cookie valid for one of the users: a
/// browser that signed in with the current password before. Its session
/// may have ended; what it posts then is kept as a draft (see
/// `dashboard::flash::draft`), so its body is read whole (see
/// `http::Site::body_limit`: an audit found an editor's 22 KB post after
/// its session ended refused unread, and the edit lost).
pub fn known_browser(ctx: &Ctx, cookies: &str) -> bool {
    // More users than this share a host seldom; a device cookie of a later
    // one is then not recognised here, and its post after the session
    // ended is held to the anonymous limit.
    const USERS_CHECKED: usize = 64;
    // Most requests without credentials carry no device cookie: no lookup
    // for them (this runs on the connection's thread for every body).
    if auth::cookie(cookies, auth::DEVICE_COOKIE).is_none() {
        return false;
    }
    ctx.store
        .user_hashes(USERS_CHECKED)
        .unwrap_or_default()
        .iter()
        .any(|(user, hash)| {
            auth::known_device(&ctx.session_secret, Some(cookies), user, hash).is_some()
        })
}

/// Ends the session `token` names.
pub fn logout(ctx: &Ctx, token: &str) -> Result<(), StoreError> {
    ctx.store
        .delete_session(&auth::token_mac(&ctx.session_secret, token))
}

/// HMAC of the session token under the session secret, in its own domain
/// (the `csrf:` prefix) so it is never the value the store keeps: the
/// token every state-changing form of that session carries.
pub fn csrf_token(ctx: &Ctx, session_token: &str) -> String {
    auth::token_mac(&ctx.session_secret, &format!("csrf:{session_token}"))
}

/// Letters and digits that cannot be mistaken for each other when copied
/// from a log: 32 symbols, 5 bits each.
const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// The one-time code that lets the first visitor create the first user;
/// `None` once a user exists (or when the dashboard is off).
#[derive(Default)]
pub struct Setup {
    code: Mutex<Option<String>>,
}

impl Setup {
    /// Prepares setup at start-up. While no user exists, a fresh code is
    /// logged to standard error, the log an operator reads (journald under
    /// systemd), under the `STDERR_ONLY` target that keeps it out of the
    /// ring `/api/logs` serves: an API key with `read:logs` (or an open
    /// API) must not be able to claim the dashboard.
    pub fn start(enabled: bool, store: &Store, addr: SocketAddr) -> Setup {
        let mut code = None;
        // Bound to every interface (0.0.0.0, ::): a browser on this host
        // opens loopback (the first-hour audit: `http://0.0.0.0:…` opens
        // nothing).
        let addr = if addr.ip().is_unspecified() {
            let lo: std::net::IpAddr = if addr.is_ipv4() {
                std::net::Ipv4Addr::LOCALHOST.into()
            } else {
                std::net::Ipv6Addr::LOCALHOST.into()
            };
            SocketAddr::new(lo, addr.port())
        } else {
            addr
        };
        if enabled && store.user_count().unwrap_or(0) == 0 {
            let c = new_setup_code();
            crate::logging::warn_always(
                crate::logging::STDERR_ONLY,
                &format!(
                    "dashboard setup code {c} - open http://{addr}/setup to create the \
                     first user (or run `mailproc set-password USER`)"
                ),
            );
            log::warn!(
                "dashboard: no user exists yet; the one-time code for http://{addr}/setup was \
                 printed to standard error"
            );
            code = Some(c);
        }
        Setup {
            code: Mutex::new(code),
        }
    }

    /// Whether `given` is the setup code (case, spaces and dashes ignored),
    /// compared in constant time.
    pub fn matches(&self, given: &str) -> bool {
        let norm = |s: &str| -> String {
            s.chars()
                .filter(|c| !c.is_whitespace() && *c != '-')
                .map(|c| c.to_ascii_uppercase())
                .collect()
        };
        match &*self.code.lock() {
            Some(code) => auth::secret_eq(&norm(code), &norm(given)),
            None => false,
        }
    }

    /// Setup is over for good once a user exists.
    pub fn close(&self) {
        *self.code.lock() = None;
    }
}

fn new_setup_code() -> String {
    let bytes = auth::random_bytes::<12>();
    let chars: Vec<char> = bytes
        .iter()
        .map(|b| CODE_ALPHABET[usize::from(b & 31)] as char)
        .collect();
    chars
        .chunks(4)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-")
}

/// Drafts kept at most: a few operators, each with an edit in flight.
const DRAFTS_KEPT: usize = 8;
/// How long a draft waits for its author to log in again.
pub const DRAFT_TTL: Duration = Duration::from_secs(30 * 60);

/// Configuration edits posted after their session ended, by random id:
/// bounded in count, size (the 1 MiB body limit) and age, and handed back
/// only for the id, which only its author's browser holds.
#[derive(Default)]
pub struct Drafts {
    kept: Mutex<HashMap<String, (Instant, Draft)>>,
}

/// An edit of the configuration posted after its author's session ended.
pub struct Draft {
    pub text: String,
    /// The version of the file it was made from (`config::file_version`),
    /// as its page said.
    pub base: Option<String>,
}

impl Drafts {
    /// Keeps `draft` and returns the id that gets it back.
    pub fn keep(&self, draft: Draft) -> String {
        let id = auth::new_token();
        let mut kept = self.kept.lock();
        kept.retain(|_, (at, _)| at.elapsed() < DRAFT_TTL);
        while kept.len() >= DRAFTS_KEPT {
            let oldest = kept
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => kept.remove(&k),
                None => break,
            };
        }
        kept.insert(id.clone(), (Instant::now(), draft));
        id
    }

    /// The draft kept under `id`, taken out of the store.
    pub fn take(&self, id: &str) -> Option<Draft> {
        let mut kept = self.kept.lock();
        kept.retain(|_, (at, _)| at.elapsed() < DRAFT_TTL);
        kept.remove(id).map(|(_, draft)| draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_codes_are_long_and_forgiving_to_type() {
        let c = new_setup_code();
        assert_eq!(c.len(), 14, "{c}");
        let d = Setup {
            code: Mutex::new(Some(c.clone())),
        };
        assert!(d.matches(&c));
        assert!(d.matches(&c.to_lowercase().replace('-', " ")));
        assert!(!d.matches("AAAA-AAAA-AAAA"));
        assert!(!d.matches(""));
        d.close();
        assert!(!d.matches(&c));
    }
}
